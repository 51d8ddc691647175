#include "kopt/analysis/roofline.hpp"

#include <gtest/gtest.h>

#include "kopt/analysis/explanation.hpp"
#include "ncu_fixtures.hpp"

namespace kopt {
namespace {

TEST(Flops, FusedMultiplyAddCountsTwice) {
  MetricValues m{{"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 100},
                 {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10},
                 {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 5},
                 {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 3},
                 {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 7},
                 {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", 4096},
                 {"sm__ops_path_tensor_src_fp16.sum", 1024}};
  FlopCounts f = flops_from_metrics(m, true);
  EXPECT_EQ(f.fp32, 215);
  EXPECT_EQ(f.fp64, 6);
  EXPECT_EQ(f.fp16, 28);  // HFMA2: two lanes, two FLOPs each
  EXPECT_EQ(f.tensor, 5120);
  EXPECT_EQ(f.tensor_precision, "bf16");
  EXPECT_EQ(f.dominant(), "tensor");
  EXPECT_EQ(flops_from_metrics(m, false).fp16, 0);
}

TEST(Flops, NaiveGemmCountsTwoFlopsPerMultiplyAdd) {
  // 1024^3 multiply-adds: ncu counts 1024^3 FFMA thread instructions.
  NcuKernelProfile k = test::ncu_fixture_kernel("h100/gemm_f32_naive.csv");
  FlopCounts f = flops_from_metrics(k.metrics, false);
  EXPECT_NEAR(f.fp32, 2.0 * 1024 * 1024 * 1024, 0.01 * 2.0 * 1024 * 1024 * 1024);
}

std::vector<Ceiling> ceilings() {
  return {Ceiling{"dram_copy", "B/s", 2.96e12, 2.9e12, "cuMemcpyDtoDAsync", ""},
          Ceiling{"fp32_fma", "FLOP/s", 65.6e12, 65e12, "FMA kernel", ""},
          Ceiling{"tensor_bf16", "FLOP/s", 0, 0, "", "cublas failed"}};
}

TEST(Roofs, MeasuredCeilingsTakePrecedenceAndSayWhere) {
  const GpuSpec* h100 = find_gpu_spec("h100-sxm");
  ASSERT_TRUE(h100);
  std::vector<Ceiling> c = ceilings();
  RoofChoice r = choose_roofs("fp32", h100, &c, "2026-11-21T10:00:00Z");
  ASSERT_TRUE(r.compute && r.memory);
  EXPECT_EQ(r.compute->origin, "measured");
  EXPECT_DOUBLE_EQ(r.memory->rate, 2.96e12);
  EXPECT_NE(r.memory->source.find("2026-11-21"), std::string::npos);
  // A failed measurement falls back to the spec, with its citation.
  RoofChoice bf = choose_roofs("bf16", h100, &c, "");
  ASSERT_TRUE(bf.compute);
  EXPECT_EQ(bf.compute->origin, "spec");
  EXPECT_DOUBLE_EQ(bf.compute->rate, 989.4e12);
  EXPECT_NE(bf.compute->source.find("whitepaper"), std::string::npos);
  // No measurement and no spec value: no roof, and a note that says so.
  RoofChoice none = choose_roofs("fp32", find_gpu_spec("h200"), nullptr, "");
  EXPECT_TRUE(none.compute);  // the H200 datasheet lists FP32
  RoofChoice unknown = choose_roofs("fp32", nullptr, nullptr, "");
  EXPECT_FALSE(unknown.compute);
  EXPECT_EQ(unknown.notes.size(), 2u);
}

TEST(Roofline, IntensityRidgeAndBound) {
  RooflineInputs in;
  in.time_s = 1e-3;
  in.cost_flops = 2e9;
  in.cost_bytes = 1e7;
  in.measured_flops = 2e9;
  in.measured_bytes = 4e7;
  in.roofs.compute = Roof{"fp32", 60e12, "spec", "x"};
  in.roofs.memory = Roof{"dram", 3e12, "spec", "y"};
  Roofline r = build_roofline(in);
  EXPECT_DOUBLE_EQ(r.ridge, 20);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_DOUBLE_EQ(r.points[0].intensity, 200);
  EXPECT_EQ(r.points[0].bound, "compute");
  EXPECT_NEAR(r.points[0].pct_compute_roof, 100.0 * 2e12 / 60e12, 1e-9);
  EXPECT_DOUBLE_EQ(r.points[1].intensity, 50);
  EXPECT_NEAR(r.points[1].pct_memory_roof, 100.0 * 4e10 / 3e12, 1e-9);
  EXPECT_EQ(r.notes.size(), 1u);  // measured bytes are 4x the formula's
}

TEST(Gaps, FromPipesDramAndStalls) {
  MetricValues m{{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 90},
                 {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 10},
                 {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 88},
                 {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 86},
                 {"smsp__average_warps_active_per_issue_active.ratio", 10},
                 {"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", 5},
                 {"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", 1.4}};
  Gaps g = roofline_gaps(m);
  EXPECT_NEAR(*g.compute, 0.10, 1e-12);
  EXPECT_NEAR(*g.memory, 0.14, 1e-12);
  EXPECT_NEAR(*g.latency, 0.14, 1e-12);
  EXPECT_EQ(g.top_stall, "wait");  // "selected" is issuing, not a stall
  EXPECT_TRUE(g.near_peak);
  m["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 85;
  EXPECT_FALSE(roofline_gaps(m).near_peak);
}

TEST(Explain, RecordedProfileOnTheSpecTable) {
  ExplainInputs in;
  in.profile = test::ncu_fixture_kernel("h100/vector_add_vectorized.csv");
  in.device_name = "NVIDIA H100 80GB HBM3";
  in.cost_bytes = 3.0 * 4 * (1 << 24);
  in.cost_flops = 1 << 24;
  in.has_half_data = false;
  Explanation e = explain(in);
  EXPECT_EQ(e.spec_id, "h100-sxm");
  EXPECT_EQ(e.precision, "fp32");
  EXPECT_EQ(e.bottleneck.cls, BottleneckClass::memory_bound);
  ASSERT_EQ(e.roofline.points.size(), 2u);
  EXPECT_EQ(e.roofline.points[0].bound, "memory");
  EXPECT_GT(e.roofline.points[1].pct_memory_roof, 50);
  EXPECT_EQ(e.roofline.memory->origin, "spec");
  auto j = to_json(e);
  EXPECT_EQ(j["bottleneck"]["class"], "memory-bound");
}

}  // namespace
}  // namespace kopt
