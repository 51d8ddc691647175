// PeakWatch: the largest reading while watched, a short peak between two ends included, and
// nothing when no reading succeeds.
#include "kopt/core/peak_watch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kopt {
namespace {
using namespace std::chrono_literals;

TEST(PeakWatch, CatchesAPeakThatIsGoneBeforeItStops) {
  std::atomic<std::uint64_t> level{100};
  std::atomic<int> reads{0};
  PeakWatch watch(
      [&]() -> std::optional<std::uint64_t> {
        ++reads;
        return level.load();
      },
      2ms);
  std::this_thread::sleep_for(20ms);
  level = 900;  // a job's tensors, then given back
  std::this_thread::sleep_for(30ms);
  level = 150;
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(watch.stop(), 900u);
  int after = reads.load();
  EXPECT_GE(after, 5);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(reads.load(), after) << "no reading after stop()";
  EXPECT_EQ(watch.stop(), 900u) << "again, the same";
}

TEST(PeakWatch, WithNoReadingThereIsNoPeak) {
  PeakWatch watch([]() -> std::optional<std::uint64_t> { return std::nullopt; }, 1ms);
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(watch.stop());
}

}  // namespace
}  // namespace kopt
