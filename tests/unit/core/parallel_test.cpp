#include "kopt/core/parallel.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace kopt {
namespace {

TEST(ParallelFor, EveryIndexOnceOnSeveralThreads) {
  std::vector<int> hits(1000, 0);
  std::mutex m;
  std::set<std::thread::id> threads;
  parallel_for(hits.size(), 4, [&](std::size_t i) {
    ++hits[i];  // each index is one thread's: no race
    std::lock_guard lock(m);
    threads.insert(std::this_thread::get_id());
    if (threads.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_GE(threads.size(), 2u);
  EXPECT_LE(threads.size(), 4u);
}

TEST(ParallelFor, OneJobRunsInOrderOnTheCallingThread) {
  std::vector<std::size_t> order;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  parallel_for(5, 1, [&](std::size_t i) {
    order.push_back(i);
    same_thread = same_thread && std::this_thread::get_id() == caller;
  });
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(same_thread);
  parallel_for(0, 8, [&](std::size_t) { ADD_FAILURE() << "no work, no call"; });
}

TEST(ParallelFor, HardwareJobsIsAtLeastOne) {
  EXPECT_GE(hardware_jobs(), 1u);
}

TEST(SplitRanges, EvenContiguousRangesLargerFirst) {
  using R = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(split_ranges(10, 3), (R{{0, 4}, {4, 7}, {7, 10}}));
  EXPECT_EQ(split_ranges(2, 4), (R{{0, 1}, {1, 2}}));  // fewer items than parts
  EXPECT_EQ(split_ranges(5, 1), (R{{0, 5}}));
  EXPECT_TRUE(split_ranges(0, 2).empty());
}

}  // namespace
}  // namespace kopt
