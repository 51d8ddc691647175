// Device tests of the timer, the comparison and the ceilings (label "gpu").
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"
#include "kopt_json.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;

class Bench : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", m_cache.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }

  json kopt(std::vector<std::string> args, int& rc) { return test::kopt_json(std::move(args), rc); }
  std::string example(const char* name) {
    return (test::source_dir() / "examples" / name).string();
  }
  TempDir m_cache{"kopt-bench-cache"};
};

// kopt ceilings --json's ceilings, by name.
std::map<std::string, json> ceilings_by_name(const json& c) {
  std::map<std::string, json> by;
  for (const auto& x : c["result"]["ceilings"]) by[x["name"]] = x;
  return by;
}

TEST_F(Bench, ColdSamplesFlushTheL2AndStopOnNoise) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = kopt({"bench", example("softmax"), "--kernel", "tuned", "--max-time", "5"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  const json& v = j["variants"][0];
  EXPECT_EQ(v["status"], "ok");
  EXPECT_GE(j["flush_bytes"].get<std::int64_t>(), j["device"]["l2_bytes"].get<std::int64_t>());
  EXPECT_EQ(j["flush_method"], "read");
  const json& s = v["summary"];
  EXPECT_GE(s["n"].get<int>(), 10);
  EXPECT_EQ(v["series"]["samples_s"].size(), s["n"].get<std::size_t>());
  EXPECT_GT(s["median"].get<double>(), 1e-6);
  EXPECT_LT(s["rel_noise"].get<double>(), 0.05);
  EXPECT_LE(s["p10"].get<double>(), s["median"].get<double>());
  EXPECT_LE(s["median"].get<double>(), s["p90"].get<double>());
  std::string stop = v["series"]["stop"];
  EXPECT_TRUE(stop == "noise_reached" || stop == "noise_plateau") << stop;
  EXPECT_EQ(v["series"]["blocking_timeouts"], 0);
  EXPECT_GT(v["series"]["launch_overhead_us"].get<double>(), 0.0);
  EXPECT_GT(j["clocks_before"]["sm_mhz"].get<int>(), 0);
  EXPECT_GT(v["gbps"].get<double>(), 0.0);
}

TEST_F(Bench, HotModeBatchesTinyKernelsInAGraph) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--dim", "n=4096",
                 "--mode", "hot", "--max-time", "5"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  const json& series = j["variants"][0]["series"];
  EXPECT_TRUE(series["graph"].get<bool>());
  EXPECT_GT(series["batch"].get<int>(), 1);
  EXPECT_LT(j["variants"][0]["summary"]["median"].get<double>(), 10e-6);
  EXPECT_EQ(j["flush_bytes"], 0);
}

TEST_F(Bench, InterleavedComparisonNamesTheFasterKernel) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = kopt(
      {"bench", example("softmax"), "--kernel", "tuned", "--vs-kernel", "naive", "--max-time", "5"},
      rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_FALSE(j["comparison"].is_null());
  EXPECT_EQ(j["comparison"]["verdict"], "faster");
  EXPECT_LT(j["comparison"]["ratio"].get<double>(), 0.2);
  EXPECT_EQ(j["variants"][0]["summary"]["n"], j["variants"][1]["summary"]["n"]);  // paired
  EXPECT_EQ(j["variants"][0]["series"]["stop"], "verdict_reached");
}

TEST_F(Bench, TheSamePointAgainstItselfIsTheSame) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = kopt({"bench", example("gemm_f32"), "--kernel", "register_tiled", "--vs", "BM=64",
                 "--threshold", "2", "--max-time", "5", "--min-samples", "40"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["comparison"]["verdict"], "same") << j["comparison"].dump();
}

TEST_F(Bench, AWrongKernelIsNotTimed) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = kopt({"bench", (test::source_dir() / "tests/fixtures/problems/faults").string(),
                 "--kernel", "wrong"},
                rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(j["variants"][0]["status"], "wrong");
  EXPECT_EQ(j["variants"][0]["summary"]["n"], 0);
}

TEST_F(Bench, CeilingsAreMeasuredCachedAndCatchATimeBelowTheFloor) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json c = kopt({"ceilings", "--refresh"}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  std::map<std::string, json> by = ceilings_by_name(c);
  double copy = by["dram_copy"]["best"].get<double>(), fma = by["fp32_fma"]["best"].get<double>();
  EXPECT_GT(copy, 0.3e12);  // any current datacenter GPU; H100 HBM3 is ~3.35 TB/s peak
  EXPECT_LT(copy, 10e12);
  EXPECT_GT(fma, 5e12);
  EXPECT_LT(fma, 200e12);
  if (by.count("tensor_f16") && by["tensor_f16"]["error"].get<std::string>().empty()) {
    EXPECT_GT(by["tensor_f16"]["best"].get<double>(), 2 * fma);
  }
  json again = kopt({"ceilings"}, rc);
  EXPECT_TRUE(again["cached"].get<bool>());

  json lie = kopt({"bench", (test::source_dir() / "tests/fixtures/problems/lying_cost").string(),
                   "--max-time", "3"},
                  rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(lie["variants"][0]["status"], "below_floor") << lie.dump(2);
  EXPECT_GT(lie["variants"][0]["pct_bandwidth_ceiling"].get<double>(), 100.0);
}

// The memory ceiling is what kernels really reach: the best of the driver's copy, streaming
// copy kernels, and copies timed as kopt bench's cold mode times a kernel, so that a correct
// kernel shows at most ~100 % of it and a cheat cannot hide above 100 %.
TEST_F(Bench, TheCopyCeilingIsTheBestOfMemcpyStreamingKernelsAndColdModeCopies) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json c = kopt({"ceilings", "--refresh"}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  std::map<std::string, json> by = ceilings_by_name(c);
  const char* parts[] = {"dram_memcpy", "dram_copy_kernel", "dram_copy_cold"};
  double best_part = 0;
  for (const char* name : parts) {
    ASSERT_TRUE(by.count(name)) << name << "\n" << c.dump(2);
    EXPECT_EQ(by[name]["error"], "") << by[name].dump();
    best_part = std::max(best_part, by[name]["best"].get<double>());
  }
  double copy = by["dram_copy"]["best"].get<double>();
  EXPECT_GE(copy, by["dram_memcpy"]["best"].get<double>());
  EXPECT_DOUBLE_EQ(copy, best_part);
  std::string method = by["dram_copy"]["method"];
  EXPECT_NE(method.find(" won: "), std::string::npos)
      << method;  // says which, with the others' figures
  EXPECT_NE(method.find(" reached "), std::string::npos) << method;

  // Well-tuned memory-bound examples reach at most ~100 % of it.
  json va = kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--max-time", "5"}, rc);
  ASSERT_EQ(rc, 0) << va.dump(2);
  EXPECT_TRUE(va["ceilings"].get<std::string>().starts_with("measured ")) << va["ceilings"];
  EXPECT_DOUBLE_EQ(va["roofs"]["bandwidth"]["rate"].get<double>(), copy);
  EXPECT_LE(va["variants"][0]["pct_bandwidth_ceiling"].get<double>(), 102.0)
      << va["variants"][0].dump();
  EXPECT_GT(va["variants"][0]["pct_bandwidth_ceiling"].get<double>(), 50.0);
  json sm = kopt({"bench", example("softmax"), "--kernel", "tuned", "--max-time", "5"}, rc);
  ASSERT_EQ(rc, 0) << sm.dump(2);
  EXPECT_EQ(sm["variants"][0]["status"], "ok");
  EXPECT_LE(sm["variants"][0]["pct_bandwidth_ceiling"].get<double>(), 102.0)
      << sm["variants"][0].dump();
  std::cout << "softmax tuned: " << sm["variants"][0]["pct_bandwidth_ceiling"].get<double>()
            << " % of dram_copy; vector_add vectorized: "
            << va["variants"][0]["pct_bandwidth_ceiling"].get<double>() << " %\n";
}

// A fresh cache: no `kopt ceilings` first. The roofs are measured on first use and the floor
// catches a time below it all the same.
TEST_F(Bench, TheFloorAppliesOnAFreshCache) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json lie = kopt({"bench", (test::source_dir() / "tests/fixtures/problems/lying_cost").string(),
                   "--max-time", "3"},
                  rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(lie["ceilings"].get<std::string>().starts_with("measured now (first use, "))
      << lie["ceilings"];
  EXPECT_EQ(lie["roofs"]["origin"], "measured_now");
  EXPECT_EQ(lie["variants"][0]["status"], "below_floor") << lie.dump(2);
  json c = kopt({"ceilings"}, rc);
  EXPECT_TRUE(c["cached"].get<bool>());
}

// The backend belongs to the kernel: one bench of 19_ReLU times its CUDA kernel, its solve()
// library and its Triton kernel side by side (the Triton kernel in the Python worker's timer,
// the others in the CUDA timer), with the torch rows, in one table.
TEST_F(Bench, CudaSolveAndTritonKernelsAndTheTorchRowsShareOneTable) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_TORCH();
  int rc = -1;
  auto j = kopt({"bench", example("kernelbench/19_ReLU"), "--vs-torch", "--max-time", "2"}, rc);
  std::map<std::string, json> by;
  for (const auto& v : j["variants"]) {
    std::string k = v["kernel"];
    by[k.substr(0, k.find(" ("))] = v;  // "torch eager (reference())" where ref.py has no baseline
  }
  for (const char* k : {"vec", "solve", "triton", "torch eager"}) {
    ASSERT_TRUE(by.contains(k)) << k << "\n" << j.dump(2);
    EXPECT_EQ(by[k]["status"], "ok") << by[k].dump(2);
    EXPECT_GT(by[k]["summary"]["median"].get<double>(), 0) << k;
  }
  EXPECT_TRUE(by.contains("torch.compile")) << j.dump(2);
  EXPECT_EQ(rc, 0) << j.dump(2);
}

}  // namespace
}  // namespace kopt
