// The evaluation key (evaluator.cpp): equal keys are the same measurement, which a run reuses
// instead of measuring again. The launch comes from kopt.toml, not from the build: a grid or
// block changed there must be another key; a timing policy changed is another key too.
#include <gtest/gtest.h>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/worker/worker_client.hpp"
#include "kopt_binary.hpp"

namespace kopt::evaluate {
namespace {

TEST(EvaluationKey, ALaunchChangedInKoptTomlIsAnotherMeasurement) {
  TempDir tmp("kopt-lab-key");
  auto problem = load_problem(test::source_dir() / "examples/vector_add");
  ASSERT_TRUE(problem) << problem.error().to_string();
  SystemCommandRunner runner;
  WorkerOptions wo;
  wo.command = {test::kopt_binary().string(),
                "worker"};  // without a GPU it says so: the limits are CUDA's
  wo.log_path = tmp.path() / "worker.log";
  WorkerClient worker(wo);
  cuda::NvrtcCompiler compiler;
  EvaluatorOptions o;
  o.cache_root = tmp.path() / "cache";
  const Rigour loop = Rigour::decide(1.5);
  auto key = [&](const Problem& p, const ParamPoint& point, const Rigour& r) {
    Evaluator ev(p, {CheckContext{compiler, runner, worker}}, o);
    auto k = ev.key(Candidate{"vectorized", {point.begin(), point.end()}, ""}, r);
    EXPECT_TRUE(k) << k.error().to_string();
    return k ? *k : std::string{};
  };
  auto point = default_point(*problem, *problem->find_kernel("vectorized"));
  ASSERT_TRUE(point);
  const std::string base = key(*problem, *point, loop);
  EXPECT_EQ(key(*problem, *point, loop), base);  // the same measurement
  Problem wider = *problem;
  for (auto& k : wider.kernels)
    if (k.name == "vectorized") k.launch.grid[0] = *Expr::parse("ceil_div(n, BLOCK * VEC) * 2");
  EXPECT_NE(key(wider, *point, loop), base);                    // the same build, another grid
  EXPECT_NE(key(*problem, *point, Rigour::decide(3.0)), base);  // another time cap
}

// A branch of a kernel measured against the champion built from the problem's own source: one
// job, two sources of one kernel, each candidate its own copy of the kernel reading its file.
// (The lab used to build both from the branch's file, and so compared the branch with itself.)
TEST(JobProblem, TwoSourcesOfOneKernelEachGetTheirOwnCopy) {
  auto problem = load_problem(test::source_dir() / "examples/softmax");
  ASSERT_TRUE(problem) << problem.error().to_string();
  const std::filesystem::path branch = "/tmp/branches/a1/kernel.cu";
  JobProblem job = job_problem(*problem, {{"tuned", {}, branch}, {"tuned", {}, ""}});
  ASSERT_EQ(job.candidates.size(), 2u);
  EXPECT_EQ(job.candidates[1].kernel, "tuned");  // the champion: the problem's own kernel
  EXPECT_NE(job.candidates[0].kernel, "tuned");
  const KernelSpec* own = job.problem.find_kernel("tuned");
  const KernelSpec* copy = job.problem.find_kernel(job.candidates[0].kernel);
  ASSERT_TRUE(own && copy);
  EXPECT_EQ(own->source, problem->find_kernel("tuned")->source);
  EXPECT_EQ(copy->source, branch);
  // One source for a kernel in the job: the kernel itself reads it, under its own name.
  JobProblem one = job_problem(*problem, {{"tuned", {}, branch}});
  EXPECT_EQ(one.candidates[0].kernel, "tuned");
  EXPECT_EQ(one.problem.find_kernel("tuned")->source, branch);
}

}  // namespace
}  // namespace kopt::evaluate
