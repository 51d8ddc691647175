// Why a PyTorch baseline is flagged: noise, recompilation, graph breaks, Python overhead.
#include "kopt/campaign/baseline_notes.hpp"

#include <gtest/gtest.h>

namespace kopt::campaign {
namespace {

Summary summary(double median, double noise, std::size_t n = 50) {
  Summary s;
  s.n = n;
  s.median = median;
  s.rel_noise = noise;
  return s;
}

TEST(TorchBaselineFlags, AQuietSeriesIsNotFlagged) {
  SampleSeries s;
  EXPECT_TRUE(torch_baseline_flags(s, summary(243e-6, 0.004), 0).empty());
}

TEST(TorchBaselineFlags, ANoisySeriesSaysSoAndThatNoCauseWasSeen) {
  SampleSeries s;
  auto flags = torch_baseline_flags(s, summary(243e-6, 0.19), 0);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("noisy: 19.0 %"), std::string::npos) << flags[0];
  EXPECT_NE(flags[0].find("no cause seen"), std::string::npos) << flags[0];
}

TEST(TorchBaselineFlags, ANoisyCompiledCallNamesRecompilationGraphBreaksAndPythonOverhead) {
  SampleSeries s;
  s.recompiles = 2;
  s.graph_breaks = 1;
  s.launch_overhead_us = 400;  // the host's call, against 243 us on the GPU
  auto flags = torch_baseline_flags(s, summary(243e-6, 0.12), 3);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("recompiled 2 times"), std::string::npos) << flags[0];
  EXPECT_NE(flags[0].find("1 graph break:"), std::string::npos) << flags[0];
  EXPECT_NE(flags[0].find("Python overhead: a call takes 400.0 us"), std::string::npos) << flags[0];
  EXPECT_NE(flags[0].find("throttling after 3 of 50"), std::string::npos) << flags[0];
}

TEST(TorchBaselineFlags, ARecompilationInsideTheTimingIsFlaggedEvenWhenQuiet) {
  SampleSeries s;
  s.recompiles = 1;
  auto flags = torch_baseline_flags(s, summary(50e-6, 0.002), 0);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_NE(flags[0].find("recompiled 1 time while"), std::string::npos) << flags[0];
}

}  // namespace
}  // namespace kopt::campaign
