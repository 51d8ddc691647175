// Boundary shapes (problem/boundary_shapes.hpp): sizes that are a multiple of no tile width and
// of 1, derived per kernel from its constraints, coupled constraints held for the whole shape,
// and [check] dims saying which dims a kernel must handle.
#include "kopt/problem/boundary_shapes.hpp"

#include <gtest/gtest.h>

namespace kopt {
namespace {

Expr ex(const std::string& s) {
  return *Expr::parse(s);
}

Problem gemm() {
  Problem p;
  p.dims = {Dim{"M", 1024, {}}, Dim{"N", 1024, {}}, Dim{"K", 1024, {}}, Dim{"flag", 7, {}}};
  TensorSpec a{"A", DType::f32, {ex("M"), ex("K")}, Role::input, {}, {}, {}};
  TensorSpec b{"B", DType::f32, {ex("K"), ex("N")}, Role::input, {}, {}, {}};
  TensorSpec c{"C", DType::f32, {ex("M"), ex("N")}, Role::output, {}, {}, {}};
  p.tensors = {a, b, c};
  KernelSpec k;
  k.name = "k";
  p.kernels = {k};
  return p;
}

TEST(BoundaryShapes, TailsArePrimesNearHalfAndOnesAreOne) {
  Problem p = gemm();
  auto s = boundary_shapes(p, p.kernels[0], {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, BoundaryKind::tails);
  EXPECT_EQ(s[0].label(), "M=509 N=509 K=509");
  EXPECT_EQ(s[0].dims.at("flag"), 7) << "a dim no tensor's shape names is no size";
  EXPECT_EQ(s[1].kind, BoundaryKind::ones);
  EXPECT_EQ(s[1].label(), "M=1 N=1 K=1");
  EXPECT_EQ(prime_at_most(512), 509);
  EXPECT_EQ(prime_at_most(1), 2);
}

// A tensor map's rows must be a multiple of 16 bytes for TMA: 383 bf16 columns (766 bytes)
// cannot be launched at all, so the tails of a kernel that maps the tensor are 8 x a prime.
TEST(BoundaryShapes, AKernelThatTakesATensorMapGetsRowsTmaCanStride) {
  Problem p;
  p.dims = {Dim{"rows", 1000, {}}, Dim{"cols", 776, {}}};
  p.tensors = {TensorSpec{"x", DType::bf16, {ex("rows"), ex("cols")}, Role::input, {}, {}, {}},
               TensorSpec{"y", DType::bf16, {ex("rows"), ex("cols")}, Role::output, {}, {}, {}}};
  KernelSpec k;
  k.name = "tma_copy";
  ArgSpec map;
  map.tensor = "x";
  map.tensor_map = TensorMapSpec{{ex("BR"), ex("BC")}, 0};
  ArgSpec y;
  y.tensor = "y";
  k.args = {map, y};
  p.kernels = {k};
  auto s = boundary_shapes(p, p.kernels[0], {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label(), "rows=499 cols=376");  // 8 x 47: 752-byte rows
  EXPECT_EQ(s[1].label(), "rows=1 cols=8");
  KernelSpec plain = k;
  plain.args[0].tensor_map.reset();  // a pointer: any row length
  EXPECT_EQ(boundary_shapes(p, plain, {})[0].label(), "rows=499 cols=383");
}

TEST(BoundaryShapes, ConstraintsChooseTheSmallestPowerOfTwoTheyAccept) {
  Problem p = gemm();
  KernelSpec& k = p.kernels[0];
  k.params = {ParamSpec{"VEC", {4}, 4, {}}};
  k.constraints = {Constraint{ex("M * N % VEC == 0"), {}}, Constraint{ex("K % 64 == 0"), {}}};
  auto s = boundary_shapes(p, k, {{"VEC", 4}});
  ASSERT_EQ(s.size(), 2u);
  // M moves alone (N is still 1024), then N must make M * N a multiple of 4 with M = 509.
  EXPECT_EQ(s[0].dims.at("M"), 509);
  EXPECT_EQ(s[0].dims.at("N"), 4 * 127);
  EXPECT_EQ(s[0].dims.at("K"), 64 * 7) << "K = 64 * an odd prime";
  EXPECT_EQ(s[1].label(), "M=1 N=4 K=64");
  for (const auto& shape : s) {
    Scope scope;
    for (const auto& [n, v] : shape.dims) scope[n] = v;
    auto bad = violated_constraint(k, scope, {{"VEC", 4}});
    ASSERT_TRUE(bad);
    EXPECT_EQ(*bad, nullptr) << shape.label();
  }
}

TEST(BoundaryShapes, ADimNoCandidateFitsIsHeldAndNamed) {
  Problem p = gemm();
  p.kernels[0].constraints = {Constraint{ex("K == 1024"), {}}};
  auto s = boundary_shapes(p, p.kernels[0], {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label(), "M=509 N=509");
  EXPECT_EQ(s[0].held, std::vector<std::string>{"K"});
  p.kernels[0].constraints = {Constraint{ex("M == 1024 && N == 1024 && K == 1024"), {}}};
  EXPECT_TRUE(boundary_shapes(p, p.kernels[0], {}).empty()) << "nothing can move";
}

TEST(BoundaryShapes, CheckDimsSayWhichDimsMustMove) {
  Problem p = gemm();
  p.check_dims = {{"M", 700}, {"N", 1024}};  // N at its declared value, K not named: both kept
  auto s = boundary_shapes(p, p.kernels[0], {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label(), "M=509");
  EXPECT_EQ(s[0].held, (std::vector<std::string>{"N", "K"}));
  EXPECT_EQ(s[1].label(), "M=1");
}

TEST(BoundaryShapes, SmallDimsMoveBelowTheirValueAndTwoStays) {
  Problem p;
  p.dims = {Dim{"n", 20, {}}, Dim{"c", 2, {}}};
  p.tensors = {TensorSpec{"y", DType::f32, {ex("c"), ex("n")}, Role::output, {}, {}, {}}};
  KernelSpec k;
  auto s = boundary_shapes(p, k, {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label(), "n=19");
  EXPECT_EQ(s[1].label(), "n=1");
  EXPECT_EQ(s[1].dims.at("c"), 2);
}

}  // namespace
}  // namespace kopt
