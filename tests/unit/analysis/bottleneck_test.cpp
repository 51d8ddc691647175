// The classifier on metrics recorded on an H100 (tests/fixtures/ncu/README.md), and on
// hand-made metric sets for the classes the examples do not exercise.
#include "kopt/analysis/bottleneck.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "ncu_fixtures.hpp"

namespace kopt {
namespace {

Bottleneck classify_fixture(const std::string& name) {
  return classify_bottleneck(test::ncu_fixture_kernel("h100/" + name).metrics);
}

bool has_finding(const Bottleneck& b, const std::string& id) {
  return std::any_of(b.secondary.begin(), b.secondary.end(),
                     [&](const Finding& f) { return f.id == id; });
}

TEST(BottleneckRecorded, NaiveTransposeIsMemoryBoundWithUncoalescedStores) {
  Bottleneck b = classify_fixture("transpose_naive.csv");
  EXPECT_EQ(b.cls, BottleneckClass::memory_bound) << b.rule;
  EXPECT_TRUE(has_finding(b, "uncoalesced_global"));
  EXPECT_FALSE(b.evidence.empty());
}

TEST(BottleneckRecorded, VectorizedVectorAddIsDramBound) {
  Bottleneck b = classify_fixture("vector_add_vectorized.csv");
  EXPECT_EQ(b.cls, BottleneckClass::memory_bound);
  EXPECT_EQ(b.limiter, "DRAM");
  EXPECT_FALSE(has_finding(b, "uncoalesced_global"));
}

TEST(BottleneckRecorded, NaiveGemmIsBoundByL1WithUncoalescedLoads) {
  Bottleneck b = classify_fixture("gemm_f32_naive.csv");
  EXPECT_EQ(b.cls, BottleneckClass::memory_bound);
  EXPECT_EQ(b.limiter, "L1/shared");
  EXPECT_TRUE(has_finding(b, "uncoalesced_global"));
}

TEST(BottleneckRecorded, RowPerThreadKernelsAreSmallGrids) {
  for (const char* f : {"softmax_naive.csv", "rmsnorm_naive.csv", "gemm_f32_register_tiled.csv"}) {
    Bottleneck b = classify_fixture(f);
    EXPECT_EQ(b.cls, BottleneckClass::small_grid) << f << ": " << b.rule;
    EXPECT_NE(b.rule.find("waves"), std::string::npos);
  }
}

TEST(BottleneckRecorded, RegisterTiledGemmShowsBankConflicts) {
  EXPECT_TRUE(has_finding(classify_fixture("gemm_f32_register_tiled.csv"), "bank_conflicts"));
}

TEST(BottleneckRecorded, NaiveReductionIsComputeBoundOnTheAluPipe) {
  Bottleneck b = classify_fixture("reduction_naive.csv");
  EXPECT_EQ(b.cls, BottleneckClass::compute_bound);
  EXPECT_EQ(b.limiter, "ALU pipe");
}

TEST(BottleneckRecorded, FullSetGivesTheSameClassAsTheMinimalLists) {
  for (const char* k : {"gemm_f32_naive", "transpose_naive"}) {
    Bottleneck minimal = classify_fixture(std::string(k) + ".csv");
    Bottleneck full = classify_fixture(std::string("full_") + k + ".csv");
    EXPECT_EQ(minimal.cls, full.cls) << k;
    EXPECT_EQ(minimal.limiter, full.limiter) << k;
  }
}

MetricValues latency_base() {
  return {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 25},
          {"launch__waves_per_multiprocessor", 8},
          {"smsp__issue_active.avg.per_cycle_active", 0.2},
          {"smsp__average_warps_active_per_issue_active.ratio", 10},
          {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 6},
          {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 1},
          {"sm__maximum_warps_per_active_cycle_pct", 100},
          {"sm__warps_active.avg.pct_of_peak_sustained_active", 95}};
}

TEST(BottleneckRules, LatencyBoundNamesTheTopStall) {
  Bottleneck b = classify_bottleneck(latency_base());
  EXPECT_EQ(b.cls, BottleneckClass::latency_bound);
  EXPECT_EQ(b.limiter, "long_scoreboard");
}

TEST(BottleneckRules, BarrierStallsMakeItSynchronizationBound) {
  MetricValues m = latency_base();
  m["smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"] = 3.5;  // 0.35 > 0.3
  m["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"] = 2;
  EXPECT_EQ(classify_bottleneck(m).cls, BottleneckClass::synchronization_bound);
  m["smsp__issue_active.avg.per_cycle_active"] =
      0.9;  // issuing well: CPIStall's rule does not fire
  EXPECT_NE(classify_bottleneck(m).cls, BottleneckClass::synchronization_bound);
}

TEST(BottleneckRules, OccupancyLimitedNamesTheLimiter) {
  MetricValues m = latency_base();
  m["sm__maximum_warps_per_active_cycle_pct"] = 37.5;
  m["launch__occupancy_limit_registers"] = 3;
  m["launch__occupancy_limit_shared_mem"] = 8;
  m["launch__occupancy_limit_warps"] = 8;
  m["launch__occupancy_limit_blocks"] = 32;
  Bottleneck b = classify_bottleneck(m);
  EXPECT_EQ(b.cls, BottleneckClass::occupancy_limited);
  EXPECT_EQ(b.limiter, "registers");
  m["launch__occupancy_limit_registers"] = 16;
  m["launch__occupancy_limit_shared_mem"] = 2;
  EXPECT_EQ(classify_bottleneck(m).limiter, "shared memory");
}

TEST(BottleneckRules, ThresholdsAreNsightComputes) {
  MetricValues m = latency_base();
  m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 59.9;
  EXPECT_EQ(classify_bottleneck(m).cls, BottleneckClass::latency_bound);
  m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 60;
  EXPECT_EQ(classify_bottleneck(m).cls, BottleneckClass::compute_bound);
  m["launch__waves_per_multiprocessor"] = 0.99;
  m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 10;
  EXPECT_EQ(classify_bottleneck(m).cls, BottleneckClass::small_grid);
}

TEST(BottleneckRules, SecondaryFindingsUseTheRuleThresholds) {
  MetricValues m = latency_base();
  m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] = 10;
  m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] = 100;  // exactly 10 %
  m["l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"] = 64;
  m["smsp__thread_inst_executed_per_inst_executed.ratio"] = 23.9;
  m["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"] =
      25.6;  // exactly 20 % wasted
  Bottleneck b = classify_bottleneck(m);
  EXPECT_TRUE(has_finding(b, "bank_conflicts"));
  EXPECT_TRUE(has_finding(b, "local_spills"));
  EXPECT_TRUE(has_finding(b, "divergence"));
  EXPECT_TRUE(has_finding(b, "uncoalesced_global"));
  EXPECT_TRUE(has_finding(b, "low_issue_rate"));
  m["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"] = 26;
  m["smsp__thread_inst_executed_per_inst_executed.ratio"] = 24;
  Bottleneck ok = classify_bottleneck(m);
  EXPECT_FALSE(has_finding(ok, "uncoalesced_global"));
  EXPECT_FALSE(has_finding(ok, "divergence"));
}

TEST(BottleneckRules, MissingSpeedOfLightIsUnknownAndSaysWhy) {
  Bottleneck b = classify_bottleneck({{"launch__grid_size", 4}});
  EXPECT_EQ(b.cls, BottleneckClass::unknown);
  EXPECT_EQ(b.missing.size(), 2u);
  EXPECT_NE(b.rule.find("sol"), std::string::npos);
}

}  // namespace
}  // namespace kopt
