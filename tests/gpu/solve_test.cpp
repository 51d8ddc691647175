// The solve() contract on the GPU (label "gpu"): nvcc's library, called in the worker with
// device pointers, passes its check; its time includes the host's call (no blocking kernel,
// since solve() may synchronize), which bench says; a solve() that faults is a failed
// candidate, not a crashed tool.
#include <gtest/gtest.h>

#include <fstream>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class SolveAbi : public test::PrivateCacheTest {};

std::string relu() { return (test::source_dir() / "examples/kernelbench/19_ReLU").string(); }

TEST_F(SolveAbi, ALibraryPassesItsCheckAndIsTimedWithTheHostCallInside) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_TORCH();  // the problem's reference is a ref.py
  int rc = -1;
  auto c = test::kopt_json({"--backend", "cuda", "check", relu(), "--kernel", "solve", "--dim", "batch_size=64"}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["status"], "passed");
  auto b = test::kopt_json(
      {"--backend", "cuda", "bench", relu(), "--kernel", "solve", "--dim", "batch_size=64", "--max-time", "0.5"}, rc);
  ASSERT_EQ(rc, 0) << b.dump(2);
  EXPECT_TRUE(b["variants"][0]["series"]["host_in_window"].get<bool>()) << b["variants"][0].dump(2);
  EXPECT_GT(b["variants"][0]["summary"]["median"].get<double>(), 0);
}

TEST_F(SolveAbi, ASolveThatFaultsIsAFailedCandidate) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path dir = m_dir.path() / "relu";
  fs::copy(relu(), dir);
  std::ofstream(dir / "solve.cu", std::ios::trunc) << "#include <cuda_runtime.h>\n"
                                     "__global__ void bad(float* out) { out[1ll << 40] = 1.f; }\n"
                                     "extern \"C\" void solve(const float* x, float* out, int batch_size, int dim) {\n"
                                     "  bad<<<1, 1>>>(out);\n  cudaDeviceSynchronize();\n}\n";
  int rc = -1;
  auto c = test::kopt_json({"--backend", "cuda", "check", dir.string(), "--kernel", "solve", "--dim", "batch_size=64"},
                           rc);
  EXPECT_EQ(rc, 1) << c.dump(2);
  EXPECT_NE(c["kernels"][0]["status"], "passed") << c.dump(2);
}

}  // namespace
}  // namespace kopt
