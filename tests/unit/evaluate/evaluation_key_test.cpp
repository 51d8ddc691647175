// The loop's evaluation key (gpu_lab.cpp): equal keys are the same measurement, which a run
// reuses instead of measuring again. The launch comes from kopt.toml, not from the build: a
// grid or block changed there must be another key.
#include <gtest/gtest.h>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/engine/gpu_lab.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/worker/worker_client.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

TEST(EvaluationKey, ALaunchChangedInKoptTomlIsAnotherMeasurement) {
  TempDir tmp("kopt-lab-key");
  auto problem = load_problem(test::source_dir() / "examples/vector_add");
  ASSERT_TRUE(problem) << problem.error().to_string();
  auto catalog = builtin_method_catalog();
  ASSERT_TRUE(catalog);
  SystemCommandRunner runner;
  WorkerOptions wo;
  wo.command = {test::kopt_binary().string(),
                "worker"};  // without a GPU it says so: the limits are CUDA's
  wo.log_path = tmp.path() / "worker.log";
  WorkerClient worker(wo);
  cuda::NvrtcCompiler compiler;
  GpuLabOptions o;
  o.cache_root = tmp.path() / "cache";
  auto key = [&](const Problem& p, const ParamPoint& point) {
    auto lab = make_gpu_lab(p, *catalog, o, CheckContext{compiler, runner, worker});
    auto k = lab->evaluation_key(Variant{"vectorized", point, ""});
    EXPECT_TRUE(k) << k.error().to_string();
    return k ? *k : std::string{};
  };
  auto point = default_point(*problem, *problem->find_kernel("vectorized"));
  ASSERT_TRUE(point);
  const std::string base = key(*problem, *point);
  EXPECT_EQ(key(*problem, *point), base);  // the same measurement
  Problem wider = *problem;
  for (auto& k : wider.kernels)
    if (k.name == "vectorized") k.launch.grid[0] = *Expr::parse("ceil_div(n, BLOCK * VEC) * 2");
  EXPECT_NE(key(wider, *point), base);  // the same build, another grid
}

}  // namespace
}  // namespace kopt
