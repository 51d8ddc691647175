// The solve() contract's build with the real nvcc (label "tool"; no GPU needed): a shared
// library that exports kopt's shim, and nvcc's errors at the user's file and line.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

CompileRequest solve_request(const std::string& text) {
  CompileRequest req;
  req.source_path = "solve.cu";
  req.source_text = text;
  req.entry = "solve";
  req.solve_abi = true;
  req.arch = "sm_90";
  return req;
}

bool have_nvcc() {
  return find_program("nvcc", {"/usr/local/cuda/bin"}).has_value() ||
         std::getenv("CUDA_HOME") != nullptr;
}

TEST(SolveBuild, TheLibraryExportsTheShim) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc (the CUDA toolkit)";
  auto text = read_text_file(test::source_dir() / "examples/kernelbench/19_ReLU/solve.cu");
  ASSERT_TRUE(text);
  TempDir dir("kopt-solve-build");
  auto b = cuda::NvrtcCompiler().compile(solve_request(*text), dir.path() / "solve.so");
  ASSERT_TRUE(b) << b.error().to_string();
  ASSERT_TRUE(b->ok) << b->log;
  EXPECT_EQ(b->module_kind, ModuleKind::solve_library);
  EXPECT_EQ(b->lowered_entry, "kopt_solve_shim");
  // Loading needs no GPU: the CUDA runtime is linked statically and starts on first use.
  void* h = ::dlopen(b->cubin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(h, "kopt_solve_shim"), nullptr);
  ::dlclose(h);
}

TEST(SolveBuild, ACompileErrorPointsAtTheUsersLine) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc (the CUDA toolkit)";
  TempDir dir("kopt-solve-build");
  auto b =
      cuda::NvrtcCompiler().compile(solve_request("extern \"C\" void solve(const float* x, float* "
                                                  "y, int n) {\n  y[0] = not_declared;\n}\n"),
                                    dir.path() / "solve.so");
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_FALSE(b->ok);
  EXPECT_NE(b->log.find("solve.cu(2)"), std::string::npos) << b->log;
}

}  // namespace
}  // namespace kopt
