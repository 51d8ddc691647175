// The solve() contract: its signature read into arguments, and the problem's checks on it.
#include "kopt/problem/solve_abi.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
namespace {

TEST(SolveSignature, ConstPointersAreInputsOtherPointersOutputsTheRestScalars) {
  auto p = parse_solve_signature(
      "#include <cuda_runtime.h>\n__global__ void k() {}\n"
      "extern \"C\" void solve(const float* __restrict__ input,\n    float* output, int N, long "
      "long M) {\n}\n",
      "solve", "solve.cu");
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ(p->size(), 4u);
  EXPECT_EQ((*p)[0].name, "input");
  EXPECT_TRUE((*p)[0].pointer);
  EXPECT_TRUE((*p)[0].is_const);
  EXPECT_EQ((*p)[0].dtype, DType::f32);
  EXPECT_EQ((*p)[0].line, 3);
  EXPECT_EQ((*p)[1].name, "output");
  EXPECT_FALSE((*p)[1].is_const);
  EXPECT_EQ((*p)[1].line, 4);
  EXPECT_EQ((*p)[2].name, "N");
  EXPECT_FALSE((*p)[2].pointer);
  EXPECT_EQ((*p)[2].dtype, DType::i32);
  EXPECT_EQ((*p)[3].dtype, DType::i64);
}

TEST(SolveSignature, WhatKoptCannotPassIsBadInputAtItsLine) {
  auto none = parse_solve_signature("void solve(float* x) {}", "solve", "s.cu");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("extern \"C\""), std::string::npos);
  auto twice = parse_solve_signature("extern \"C\" void solve(\n float** x) {}", "solve", "s.cu");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().line, 2);
  EXPECT_EQ(twice.error().field, "x");
  auto odd = parse_solve_signature("extern \"C\" void solve(struct Foo f) {}", "solve", "s.cu");
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message.find("no dtype"), std::string::npos);
}

TEST(SolveSignature, TheShimCallsSolveWithEachArgumentInOrder) {
  auto p = parse_solve_signature(
      "extern \"C\" void solve(const float* __restrict__ a, float* b, int n);", "solve", "s.cu");
  ASSERT_TRUE(p);
  std::string shim = solve_shim_source(*p, "solve");
  EXPECT_NE(shim.find("extern \"C\" const char* kopt_solve_shim(void** a)"), std::string::npos)
      << shim;
  EXPECT_NE(shim.find("solve(*(const float**)a[0]"), std::string::npos) << shim;
  EXPECT_NE(shim.find("*(float**)a[1], *(int*)a[2])"), std::string::npos) << shim;
}

const char* k_spec = R"TOML(name = "relu"
[dims]
n = 64
[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "input"
[[tensors]]
name = "y"
dtype = "f32"
shape = ["n"]
role = "output"
[reference]
kind = "cpp"
source = "ref.cpp"
entry = "ref"
args = ["x", "y", "n"]
[[kernels]]
name = "solve"
source = "solve.cu"
abi = "solve"
)TOML";

class SolveSpec : public ::testing::Test {
 protected:
  Expected<Problem> load(const std::string& signature, const std::string& extra = "") {
    std::ofstream(m_dir.path() / "ref.cpp") << "//\n";
    std::ofstream(m_dir.path() / "solve.cu") << "// solve\n" << signature << " {}\n";
    return parse_problem(k_spec + extra, m_dir.path() / "kopt.toml");
  }
  TempDir m_dir{"kopt-solve-spec"};
};

TEST_F(SolveSpec, ArgumentsComeFromTheSignatureByName) {
  auto p = load("extern \"C\" void solve(const float* x, float* y, int n)");
  ASSERT_TRUE(p) << p.error().to_string();
  const KernelSpec& k = p->kernels.at(0);
  EXPECT_EQ(k.abi, KernelSpec::Abi::solve);
  EXPECT_EQ(k.entry, "solve");
  ASSERT_EQ(k.args.size(), 3u);
  EXPECT_EQ(k.args[0].tensor, "x");
  EXPECT_EQ(k.args[1].tensor, "y");
  EXPECT_EQ(k.args[2].scalar.text(), "n");
}

TEST_F(SolveSpec, MismatchesWithKoptTomlNameTheSolveLine) {
  // No const anywhere (the skills' template): kopt.toml says which pointer is an input.
  EXPECT_TRUE(load("extern \"C\" void solve(float* x, float* y, int n)"));
  auto const_output = load("extern \"C\" void solve(const float* x, const float* y, int n)");
  ASSERT_FALSE(const_output);
  EXPECT_EQ(const_output.error().line, 2);
  EXPECT_NE(const_output.error().file.find("solve.cu"), std::string::npos);
  EXPECT_NE(const_output.error().message.find("const in solve() but kopt.toml makes it an output"),
            std::string::npos);
  auto unknown = load("extern \"C\" void solve(const float* x, float* out, int n)");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "out");
  auto dtype = load("extern \"C\" void solve(const double* x, float* y, int n)");
  ASSERT_FALSE(dtype);
  EXPECT_NE(dtype.error().message.find("f32 in kopt.toml"), std::string::npos);
  auto args = load("extern \"C\" void solve(const float* x, float* y, int n)", "args = [\"x\"]\n");
  ASSERT_FALSE(args);
  EXPECT_NE(args.error().message.find("from its signature"), std::string::npos);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(SolveAbi, ASolveThatReturnsAMessageHasItPassedOn) {
  std::string src =
      "extern \"C\" const char* solve(const float* a, float* b, int n) { return nullptr; }";
  auto p = parse_solve_signature(src, "solve", "s.cu");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->size(), 3u);
  EXPECT_TRUE(solve_returns_message(src, "solve"));
  EXPECT_FALSE(solve_returns_message("extern \"C\" void solve(float* b) {}", "solve"));
  std::string shim = solve_shim_source(*p, "solve", true);
  EXPECT_NE(shim.find("const char* message = solve("), std::string::npos) << shim;
  EXPECT_NE(shim.find("if (message) return message;"), std::string::npos) << shim;
  EXPECT_EQ(solve_shim_source(*p, "solve").find("message"), std::string::npos);
}

}  // namespace
}  // namespace kopt
