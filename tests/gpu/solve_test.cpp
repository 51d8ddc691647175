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

std::string relu() {
  return (test::source_dir() / "examples/kernelbench/19_ReLU").string();
}

TEST_F(SolveAbi, ALibraryPassesItsCheckAndIsTimedWithTheHostCallInside) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_TORCH();  // the problem's reference is a ref.py
  int rc = -1;
  auto c = test::kopt_json(
      {"--backend", "cuda", "check", relu(), "--kernel", "solve", "--dim", "batch_size=64"}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["status"], "passed");
  auto b = test::kopt_json({"--backend", "cuda", "bench", relu(), "--kernel", "solve", "--dim",
                            "batch_size=64", "--max-time", "0.5"},
                           rc);
  ASSERT_EQ(rc, 0) << b.dump(2);
  EXPECT_TRUE(b["variants"][0]["series"]["host_in_window"].get<bool>()) << b["variants"][0].dump(2);
  EXPECT_GT(b["variants"][0]["summary"]["median"].get<double>(), 0);
}

// A solve() that returns while its kernel still runs on a stream of its own is timed with that
// work inside the window (kopt synchronizes the device before the stop event), and checked on
// finished outputs: it is no faster than the same library that waits.
TEST_F(SolveAbi, WorkLeftRunningOnAnotherStreamIsInsideTheWindow) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  std::string dir = (test::source_dir() / "tests/fixtures/problems/solve_streams").string();
  auto c = test::kopt_json({"--backend", "cuda", "check", dir}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  auto b = test::kopt_json({"--backend", "cuda", "bench", dir, "--max-time", "1"}, rc);
  ASSERT_EQ(rc, 0) << b.dump(2);
  ASSERT_EQ(b["variants"].size(), 2u) << b.dump(2);
  double synced = b["variants"][0]["summary"]["median"],
         unsynced = b["variants"][1]["summary"]["median"];
  EXPECT_EQ(b["variants"][1]["kernel"], "unsynced");
  EXPECT_GT(unsynced, 0.8 * synced) << "synced " << synced << " s, unsynced " << unsynced << " s";
}

TEST_F(SolveAbi, ASolveThatFaultsIsAFailedCandidate) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path dir = m_dir.path() / "relu";
  fs::copy(relu(), dir);
  std::ofstream(dir / "solve.cu", std::ios::trunc)
      << "#include <cuda_runtime.h>\n"
         "__global__ void bad(float* out) { out[1ll << 40] = 1.f; }\n"
         "extern \"C\" void solve(const float* x, float* out, int batch_size, int dim) {\n"
         "  bad<<<1, 1>>>(out);\n  cudaDeviceSynchronize();\n}\n";
  int rc = -1;
  auto c = test::kopt_json(
      {"--backend", "cuda", "check", dir.string(), "--kernel", "solve", "--dim", "batch_size=64"},
      rc);
  EXPECT_EQ(rc, 1) << c.dump(2);
  EXPECT_NE(c["kernels"][0]["status"], "passed") << c.dump(2);
}

}  // namespace
}  // namespace kopt
