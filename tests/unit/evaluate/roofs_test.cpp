// The roofs' source resolution order (stored, measured now, spec table, none) with a fake
// measurement in place of the worker, and the floor they give.
#include "kopt/evaluate/roofs.hpp"

#include <gtest/gtest.h>

#include "kopt/analysis/roofline.hpp"
#include "kopt/core/fs.hpp"

namespace kopt::evaluate {
namespace {

DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";  // in the spec table (h100-sxm: 3352 GB/s)
  d.cc_major = 9;
  d.driver_version = 13000;
  return d;
}

DeviceInfo unlisted_gpu() {
  DeviceInfo d = h100();
  d.name = "Voodoo2 Accelerator";
  return d;
}

DeviceInfo pocl_cpu() {
  DeviceInfo d;
  d.backend = "opencl";
  d.device_type = "cpu";
  d.name = "pthread-haswell-AMD EPYC";
  return d;
}

CeilingsResult measurement(double copy, double fma) {
  CeilingsResult r;
  r.ceilings.push_back(Ceiling{"dram_copy", "B/s", copy, copy * 0.97, "a copy kernel", ""});
  r.ceilings.push_back(Ceiling{"fp32_fma", "FLOP/s", fma, fma * 0.98, "FMA chains", ""});
  return r;
}

// A measurement that counts its calls and returns what it was told to.
struct FakeMeasure {
  int calls = 0;
  Expected<CeilingsResult> answer = measurement(3.1e12, 60e12);
  MeasureCeilings fn() {
    return [this]() -> Expected<CeilingsResult> {
      ++calls;
      return answer;
    };
  }
};

class RoofsTest : public ::testing::Test {
 protected:
  std::filesystem::path cache() const { return m_dir.path(); }
  TempDir m_dir{"kopt-roofs-test"};
};

TEST_F(RoofsTest, StoredCeilingsComeFirstAndNothingIsMeasured) {
  ASSERT_TRUE(save_ceilings(
      cache(), StoredCeilings{h100(), measurement(3.0e12, 65e12), "2026-11-20T08:00:00Z"}));
  FakeMeasure m;
  DeviceRoofs r = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(m.calls, 0);
  EXPECT_EQ(r.origin, RoofsOrigin::measured);
  EXPECT_EQ(r.source, "measured 2026-11-20T08:00:00Z");
  EXPECT_DOUBLE_EQ(r.bandwidth.rate, 3.0e12);
  EXPECT_EQ(r.bandwidth.name, "dram_copy");
  EXPECT_DOUBLE_EQ(r.compute.rate, 65e12);
  EXPECT_DOUBLE_EQ(r.floor_margin, 0.9);
  ASSERT_TRUE(r.ceilings);
}

TEST_F(RoofsTest, AFreshCacheIsMeasuredOnFirstUseAndStored) {
  FakeMeasure m;
  std::vector<std::string> log;
  DeviceRoofs r =
      resolve_roofs(cache(), h100(), m.fn(), [&](const std::string& line) { log.push_back(line); });
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(r.origin, RoofsOrigin::measured_now);
  EXPECT_TRUE(r.source.starts_with("measured now (first use, ")) << r.source;
  EXPECT_TRUE(r.source.ends_with(" s)")) << r.source;
  EXPECT_DOUBLE_EQ(r.bandwidth.rate, 3.1e12);
  EXPECT_EQ(log.size(), 1u);
  // Stored: the next command finds them and measures nothing.
  auto stored = load_ceilings(cache(), h100());
  ASSERT_TRUE(stored);
  EXPECT_DOUBLE_EQ(ceiling_value(stored->result, "dram_copy"), 3.1e12);
  DeviceRoofs again = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(again.origin, RoofsOrigin::measured);
  EXPECT_EQ(again.source, "measured " + stored->measured_at);
}

TEST_F(RoofsTest, AFailedMeasurementFallsBackToTheCitedSpecAndIsNotRetried) {
  FakeMeasure m;
  m.answer =
      Unexpected(internal_error("the worker crashed (signal 11) measuring ceilings\nlog tail"));
  DeviceRoofs r = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(r.origin, RoofsOrigin::spec);
  EXPECT_TRUE(r.source.starts_with(
      "spec table: NVIDIA H100 SXM5 80GB, NVIDIA H100 Tensor Core GPU Architecture"))
      << r.source;
  EXPECT_NE(r.source.find("Memory Bandwidth"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("worker crashed"), std::string::npos) << r.source;
  EXPECT_EQ(r.source.find("log tail"), std::string::npos)
      << "only the first line of the error: " << r.source;
  EXPECT_DOUBLE_EQ(r.bandwidth.rate, 3352e9);
  EXPECT_EQ(r.bandwidth.name, "memory_bandwidth_gbs");
  EXPECT_DOUBLE_EQ(r.compute.rate,
                   1978.9e12);  // the fastest listed (FP8 tensor): a floor holds for any precision
  EXPECT_DOUBLE_EQ(r.floor_margin, 0.9);
  EXPECT_FALSE(r.ceilings);
  EXPECT_FALSE(load_ceilings(cache(), h100()));
  // An optimize run benches hundreds of times: the failure is remembered, not measured again.
  DeviceRoofs again = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(again.origin, RoofsOrigin::spec);
}

TEST_F(RoofsTest, AMeasurementWithAnErrorIsAFailure) {
  FakeMeasure m;
  CeilingsResult failed;
  failed.error = "cuInit failed";
  m.answer = failed;
  DeviceRoofs r = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(r.origin, RoofsOrigin::spec);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("cuInit failed"), std::string::npos);
}

TEST_F(RoofsTest, WithoutAWorkerTheSpecServes) {
  DeviceRoofs r = resolve_roofs(cache(), h100(), MeasureCeilings{});
  EXPECT_EQ(r.origin, RoofsOrigin::spec);
  EXPECT_NE(r.source.find("no worker"), std::string::npos) << r.source;
}

TEST_F(RoofsTest, NoneOnlyWhenNeitherAMeasurementNorTheSpecExists) {
  FakeMeasure m;
  m.answer = Unexpected(environment_error("no CUDA driver"));
  DeviceRoofs r = resolve_roofs(cache(), unlisted_gpu(), m.fn());
  EXPECT_EQ(r.origin, RoofsOrigin::none);
  EXPECT_TRUE(r.source.starts_with("none: measuring the ceilings failed: no CUDA driver"))
      << r.source;
  EXPECT_NE(r.source.find("not in the spec table"), std::string::npos) << r.source;
  EXPECT_EQ(r.bandwidth.rate, 0);
  EXPECT_EQ(roofline_floor_s(r, 1e9, 1e9, true), 0);
  // The same device measured: measured roofs, no spec needed.
  DeviceRoofs measured = resolve_roofs(cache() / "other", unlisted_gpu(), FakeMeasure{}.fn());
  EXPECT_EQ(measured.origin, RoofsOrigin::measured_now);
}

TEST_F(RoofsTest, AMeasurementWithoutABandwidthTakesItFromTheSpecAndSaysSo) {
  CeilingsResult partial = measurement(0, 60e12);
  partial.ceilings[0].error = "cannot allocate 2 x 512 MiB";
  ASSERT_TRUE(save_ceilings(cache(), StoredCeilings{h100(), partial, "2026-11-20T08:00:00Z"}));
  DeviceRoofs r = resolve_roofs(cache(), h100(), FakeMeasure{}.fn());
  EXPECT_EQ(r.origin, RoofsOrigin::measured);
  EXPECT_DOUBLE_EQ(r.compute.rate, 60e12);
  EXPECT_DOUBLE_EQ(r.bandwidth.rate, 3352e9);
  EXPECT_NE(r.source.find("bandwidth from the spec table"), std::string::npos) << r.source;
}

TEST_F(RoofsTest, StoredCeilingsWithNoUsableFigureAreMeasuredAgain) {
  CeilingsResult useless = measurement(0, 0);
  for (auto& c : useless.ceilings) c.error = "failed";
  ASSERT_TRUE(save_ceilings(cache(), StoredCeilings{h100(), useless, "2026-11-20T08:00:00Z"}));
  FakeMeasure m;
  DeviceRoofs r = resolve_roofs(cache(), h100(), m.fn());
  EXPECT_EQ(m.calls, 1);
  EXPECT_EQ(r.origin, RoofsOrigin::measured_now);
}

TEST_F(RoofsTest, TheFloorCatchesHalfTheWorkOnSpecRoofsAndSparesAGoodKernel) {
  DeviceRoofs r = resolve_roofs(cache(), h100(), MeasureCeilings{});
  ASSERT_EQ(r.origin, RoofsOrigin::spec);
  const double bytes = 3 * 64e6;  // vector_add's traffic, say
  double floor = roofline_floor_s(r, bytes, 0, true);
  EXPECT_DOUBLE_EQ(floor, bytes / 3352e9);
  // 1.7x the HBM peak (a kernel that skipped half its work): an error, not a result.
  EXPECT_TRUE(is_below_floor(r, bytes / (1.7 * 3352e9), floor));
  // 93 % of the peak, what a good copy reaches: fine.
  EXPECT_FALSE(is_below_floor(r, bytes / (0.93 * 3352e9), floor));
  // In hot mode the data may come from L2: no memory floor.
  EXPECT_EQ(roofline_floor_s(r, bytes, 0, false), 0);
}

TEST_F(RoofsTest, ACpusRoofsAreMeasuredAgainWhenContradictedAndTheBestIsKept) {
  // Measured while the host was busy: half what it does when quiet.
  ASSERT_TRUE(save_ceilings(
      cache(), StoredCeilings{pocl_cpu(), measurement(15e9, 30e9), "2026-11-20T08:00:00Z"}));
  FakeMeasure m;
  m.answer = measurement(30e9, 25e9);  // a quiet moment for memory, a busy one for FMA
  DeviceRoofs r = resolve_roofs(cache(), pocl_cpu(), m.fn());
  EXPECT_EQ(r.origin, RoofsOrigin::measured);
  EXPECT_DOUBLE_EQ(r.floor_margin, 0.5);
  EXPECT_TRUE(roofs_may_be_low(r, pocl_cpu()));
  EXPECT_FALSE(roofs_may_be_low(r, h100())) << "a GPU's measured roofs are not second-guessed";
  DeviceRoofs again = remeasure_roofs(cache(), pocl_cpu(), m.fn(), r);
  EXPECT_EQ(m.calls, 1);
  EXPECT_TRUE(again.remeasured);
  EXPECT_FALSE(roofs_may_be_low(again, pocl_cpu())) << "measured again once, not forever";
  EXPECT_DOUBLE_EQ(again.bandwidth.rate, 30e9);
  EXPECT_DOUBLE_EQ(again.compute.rate, 30e9);  // the earlier FMA figure was the better one
  EXPECT_NE(again.source.find("best of this and the measurement of 2026-11-20T08:00:00Z"),
            std::string::npos)
      << again.source;
  auto stored = load_ceilings(cache(), pocl_cpu());
  ASSERT_TRUE(stored);
  EXPECT_DOUBLE_EQ(ceiling_value(stored->result, "dram_copy"), 30e9);
}

TEST_F(RoofsTest, BestOfKeepsTheFasterFigureAndAWorkingOneOverAnError) {
  CeilingsResult a = measurement(10, 20), b = measurement(12, 0);
  b.ceilings[1].error = "did not build";
  a.ceilings.push_back(Ceiling{"tensor_f16", "FLOP/s", 100, 90, "gemm", ""});
  CeilingsResult best = best_of(a, b);
  EXPECT_DOUBLE_EQ(ceiling_value(best, "dram_copy"), 12);
  EXPECT_DOUBLE_EQ(ceiling_value(best, "fp32_fma"), 20);
  EXPECT_DOUBLE_EQ(ceiling_value(best, "tensor_f16"), 100);
}

TEST_F(RoofsTest, JsonSaysWhereEveryRoofComesFrom) {
  DeviceRoofs r = resolve_roofs(cache(), h100(), MeasureCeilings{});
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["origin"], "spec");
  EXPECT_EQ(j["source"], r.source);
  EXPECT_DOUBLE_EQ(j["bandwidth"]["rate"].get<double>(), 3352e9);
  EXPECT_EQ(j["compute"]["name"], "fp8_tflops");
  EXPECT_DOUBLE_EQ(j["floor_margin"].get<double>(), 0.9);
  DeviceRoofs none = resolve_roofs(cache(), unlisted_gpu(), MeasureCeilings{});
  EXPECT_TRUE(to_json(none)["bandwidth"].is_null());
}

// %FLOP divides by the roof of the problem's precision: a bf16 GEMM is not "43 % of the
// roof" because cuBLASLt's fp8 ceiling is twice the bf16 one. The floor keeps the fastest.
TEST(PrecisionRoof, EachPrecisionGetsItsOwnCeilingAndTheFastestStaysTheFloors) {
  CeilingsResult r = measurement(3.3e12, 65e12);
  r.ceilings.push_back(Ceiling{"tensor_bf16", "FLOP/s", 776e12, 775e12, "cublasGemmEx", ""});
  r.ceilings.push_back(Ceiling{"tensor_tf32", "FLOP/s", 405e12, 400e12, "cublasGemmEx", ""});
  r.ceilings.push_back(Ceiling{"tensor_fp8", "FLOP/s", 1446e12, 1440e12, "cublasLtMatmul", ""});
  DeviceRoofs roofs;
  roofs.compute = RoofRate{1446e12, "tensor_fp8", "measured"};
  roofs.ceilings = StoredCeilings{h100(), r, "2026-11-24T06:23:42Z"};
  EXPECT_EQ(precision_roof(roofs, "bf16").name, "tensor_bf16");
  EXPECT_EQ(precision_roof(roofs, "bf16").rate, 776e12);
  // An f32 problem's roof is the FMA's: on tf32 tensor cores its kernels are lower_precision,
  // unless kopt.toml allows tf32.
  EXPECT_EQ(precision_roof(roofs, "fp32").name, compute_ceiling_name("fp32"));
  EXPECT_EQ(precision_roof(roofs, "fp32", true).name, "tensor_tf32");
  EXPECT_EQ(precision_roof(roofs, "fp16").name, "tensor_fp8");  // not measured: the fastest
  EXPECT_EQ(precision_roof(roofs, "").name, "tensor_fp8");

  Problem p;
  p.tensors = {TensorSpec{"A", DType::f32, {}, Role::input},
               TensorSpec{"B", DType::bf16, {}, Role::input},
               TensorSpec{"C", DType::f16, {}, Role::output}};
  EXPECT_EQ(problem_precision(p), "bf16");
  p.tensors[1].dtype = DType::i32;
  EXPECT_EQ(problem_precision(p), "fp32");
  p.tensors = {TensorSpec{"idx", DType::i32, {}, Role::input}};
  EXPECT_EQ(problem_precision(p), "");
}

}  // namespace
}  // namespace kopt::evaluate
