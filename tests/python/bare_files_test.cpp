// Bare files in, through the CLI with a real torch (label python): `kopt init` on a bare OpenCL
// file and its ref.py, then check and bench given the file itself (PoCL in CI); a kopt.toml
// kept while its inputs are unchanged and inferred again when the dims change; a user's own
// kopt.toml never replaced; and the inputs kopt must refuse, each with a named error and exit 2.
#include <gtest/gtest.h>

#include <set>

#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class BareFilesCli : public test::PrivateCacheTest {
 protected:
  fs::path copy_example(const std::string& name) {
    fs::path to = m_dir.path() / name;
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(test::source_dir() / "examples/bare" / name))
      if (e.path().filename() != "kopt.toml") fs::copy_file(e.path(), to / e.path().filename());
    return to;
  }
  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = m_dir.path() / name;
    EXPECT_TRUE(write_text_atomic(p, text));
    return p;
  }
  // `kopt ARGS --json` must fail with exit 2 and an error that says `what`.
  void refused(std::vector<std::string> args, const std::string& what) {
    int rc = -1;
    auto j = test::kopt_json(std::move(args), rc);
    EXPECT_EQ(rc, 2) << j.dump(2);
    EXPECT_NE(j.value("error", "").find(what), std::string::npos)
        << "expected '" << what << "' in: " << j.value("error", "");
  }
};

TEST_F(BareFilesCli, AnOpenCLFileAndItsRefPyGoStraightToInitCheckAndBench) {
  KOPT_SKIP_WITHOUT_TORCH();
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = copy_example("relu_opencl");
  std::string cl = (dir / "relu.cl").string();
  int rc = -1;
  auto init = test::kopt_json({"init", cl, "--dims", "n=4099"}, rc);
  ASSERT_EQ(rc, 0) << init.dump(2);
  EXPECT_TRUE(init["written"].get<bool>());
  ASSERT_EQ(init["tensors"].size(), 2u);
  EXPECT_EQ(init["tensors"][0]["role"], "input");
  EXPECT_EQ(init["tensors"][1]["role"], "output");
  EXPECT_EQ(init["tensors"][1]["shape"], nlohmann::json({"n"}));
  std::set<std::string> keys, documented;
  for (auto it = init.begin(); it != init.end(); ++it) keys.insert(it.key());
  auto docs =
      nlohmann::json::parse(*read_text_file(test::source_dir() / "docs/json/commands.json"));
  for (auto it = docs["init"]["fields"].begin(); it != docs["init"]["fields"].end(); ++it)
    documented.insert(it.key());
  EXPECT_EQ(keys, documented) << "docs/json/commands.json documents init's fields";
  auto again = test::kopt_json({"init", cl, "--dims", "n=4099"}, rc);
  EXPECT_FALSE(again["written"].get<bool>()) << "same inputs: the kopt.toml is kept";

  auto check = test::kopt_json({"--backend", "opencl", "check", cl, "--dims", "n=5003"}, rc);
  ASSERT_EQ(rc, 0) << check.dump(2);
  ASSERT_EQ(check["kernels"].size(), 1u);
  EXPECT_EQ(check["kernels"][0]["status"], "passed");
  auto toml = read_text_file(dir / "kopt.toml");
  ASSERT_TRUE(toml);
  EXPECT_NE(toml->find("n = 5003"), std::string::npos) << "new dims: inferred again";

  auto bench = test::kopt_json(
      {"--backend", "opencl", "bench", cl, "--dims", "n=5003", "--max-time", "0.2"}, rc);
  ASSERT_EQ(rc, 0) << bench.dump(2);
  ASSERT_FALSE(bench["variants"].empty());
  EXPECT_EQ(bench["variants"][0]["status"], "ok") << bench.dump(2);
  EXPECT_GT(bench["variants"][0]["summary"]["median"].get<double>(), 0);
}

TEST_F(BareFilesCli, ABareFileIsCheckedAndBenchedAtTwoShapes) {
  KOPT_SKIP_WITHOUT_TORCH();
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = copy_example("relu_opencl");
  std::string cl = (dir / "relu.cl").string();
  int rc = -1;
  // One shape not a multiple of the block (256), one that is.
  auto check = test::kopt_json(
      {"--backend", "opencl", "check", cl, "--dims", "n=4099", "--axis", "n=4099,1024"}, rc);
  ASSERT_EQ(rc, 0) << check.dump(2);
  ASSERT_EQ(check["shapes"].size(), 2u);
  EXPECT_EQ(check["shapes"][1]["label"], "n=1024");
  EXPECT_EQ(check["shapes"][1]["result"]["kernels"][0]["status"], "passed");
  EXPECT_EQ(check["summary"][0]["passed_at"].size(), 2u);
  auto bench = test::kopt_json({"--backend", "opencl", "bench", cl, "--dims", "n=4099", "--axis",
                                "n=4099,1024", "--max-time", "0.2"},
                               rc);
  ASSERT_EQ(rc, 0) << bench.dump(2);
  ASSERT_EQ(bench["summary"].size(), 1u);
  ASSERT_EQ(bench["summary"][0]["rows"].size(), 2u);
  EXPECT_GT(bench["summary"][0]["rows"][0]["median_s"].get<double>(), 0);
  EXPECT_EQ(bench["summary"][0]["pct_sol"]["n"], 2);
  auto toml = read_text_file(dir / "kopt.toml");
  ASSERT_TRUE(toml);
  EXPECT_NE(toml->find("n = 4099"), std::string::npos) << "inferred once, at its own dims";
}

// kopt's own out-of-memory (its tensors do not fit beside what its other processes hold) is its
// environment failing: exit 3, never the reference's or a candidate's verdict.
TEST_F(BareFilesCli, KoptsOwnOutOfMemoryIsAnEnvironmentFailureNotAVerdict) {
  KOPT_SKIP_WITHOUT_TORCH();
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = copy_example("relu_opencl");
  int rc = -1;
  ::setenv("KOPT_TEST_PLACEMENT_OOM", "1", 1);
  auto j = test::kopt_json(
      {"--backend", "opencl", "check", (dir / "relu.cl").string(), "--dims", "n=4099"}, rc);
  ::unsetenv("KOPT_TEST_PLACEMENT_OOM");
  EXPECT_EQ(rc, 3) << j.dump(2);
  EXPECT_NE(j.value("error", "").find("do not fit"), std::string::npos) << j.dump(2);
}

TEST_F(BareFilesCli, AKernelFileOfAUsersProblemRunsThatProblemsKernel) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = m_dir.path() / "softmax";
  fs::copy(test::source_dir() / "examples/softmax", dir);
  auto before = read_text_file(dir / "kopt.toml");
  int rc = -1;
  auto j = test::kopt_json({"--backend", "opencl", "check", (dir / "kernel_naive.cl").string(),
                            "--dim", "rows=64", "--dim", "cols=256"},
                           rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["kernels"].size(), 1u) << "only the kernel whose source it is";
  EXPECT_EQ(*read_text_file(dir / "kopt.toml"), *before) << "a user's kopt.toml is never replaced";
}

TEST_F(BareFilesCli, WhatItCannotInferIsNamedWithExit2) {
  KOPT_SKIP_WITHOUT_TORCH();
  const std::string solve =
      "extern \"C\" void solve(float* A, float* B, float* C, int M, int N, int K) {}\n";
  std::string gemm = write("gemm.cu", solve).string();
  std::string dims = "M=64,N=32,K=16";
  // 1. No reference at all.
  refused({"init", gemm, "--dims", dims}, "no reference");
  std::string ref = write("ref.py", "def reference(A, B, C, **kw):\n    C.copy_(A @ B)\n").string();
  // 2. Dims that do not cover the signature.
  refused({"init", gemm, "--dims", "M=64,N=32"}, "--dims K=");
  // 3. A signature kopt cannot pass.
  refused({"init", write("pp.cu", "extern \"C\" void solve(float** A, int n) {}\n").string(),
           "--ref", ref, "--dims", "n=4"},
          "pointers to elements and scalars");
  // 4. A ModelNew without its problem.
  refused({"init", write("new.py", "class ModelNew:\n    pass\n").string(), "--ref", ref},
          "ModelNew");
  // 5. A file that is no kernel.
  refused({"init", write("notes.txt", "x").string(), "--ref", ref}, "kopt takes a kernel");
  // 6. A Python file with neither run_kernel nor ModelNew.
  refused({"init", write("k.py", "x = 1\n").string(), "--ref", ref}, "run_kernel");
  // 7. A ref.py without reference().
  refused({"init", gemm, "--ref", write("noref.py", "x = 1\n").string(), "--dims", dims},
          "has no reference");
  // 8. A ref.py that does not import.
  refused({"init", gemm, "--ref", write("broken.py", "def reference(:\n").string(), "--dims", dims},
          "does not import");
  // 9. reference() fails on the guessed shapes: the `kopt:` line to write.
  std::string two =
      write("two.cu", "extern \"C\" void solve(float* x, float* y, int R, int C) {}\n").string();
  refused({"init", two, "--ref",
           write("sum.py", "def reference(x, y, **kw):\n    y.copy_(x.sum(1)[:, None, None])\n")
               .string(),
           "--dims", "R=8,C=4"},
          "// kopt: x[R, C] y[R, C]");
  // 10. A reference that writes nothing.
  refused({"init", gemm, "--ref",
           write("pure.py", "def reference(A, B, C, **kw):\n    return A @ B\n").string(), "--dims",
           dims},
          "no tensor is an output");
  // 11. A dim that is no number.
  refused({"init", gemm, "--ref", ref, "--dims", "M=big,N=1,K=1"}, "must be an integer");
  // 12. A `kopt:` line kopt does not read.
  refused({"init", write("note.cu", "// kopt: make it fast\n" + solve).string(), "--ref", ref,
           "--dims", dims},
          "make it fast");
  // 13. --ref with a problem directory.
  refused({"check", (test::source_dir() / "examples/softmax").string(), "--ref", ref},
          "--ref goes");
  // 14. A user's kopt.toml beside a file that is none of its kernels.
  fs::path user = m_dir.path() / "user";
  fs::copy(test::source_dir() / "examples/softmax", user);
  std::string other = (user / "other.cl").string();
  ASSERT_TRUE(write_text_atomic(other, "__kernel void k(__global float* y) {}\n"));
  refused({"init", other, "--ref", ref}, "did not infer");
  refused({"check", other}, "none of its kernels");
}

}  // namespace
}  // namespace kopt
