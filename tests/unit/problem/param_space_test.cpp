#include "kopt/problem/param_space.hpp"

#include <gtest/gtest.h>

#include "kopt/problem/launch.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

Problem example(const char* name) {
  auto p = load_problem(test::source_dir() / "examples" / name);
  EXPECT_TRUE(p) << p.error().to_string();
  return *p;
}

TEST(ParamSpace, EnumeratesOnlyPointsThatSatisfyTheConstraints) {
  Problem p = example("transpose");
  const KernelSpec& k = *p.find_kernel("tiled");
  EXPECT_EQ(product_size(k), 3u * 4u * 2u);
  std::vector<ParamPoint> points;
  auto n = for_each_point(k, p.dim_scope(), 1000, [&](const ParamPoint& pt) {
    points.push_back(pt);
    return true;
  });
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, points.size());
  for (const auto& pt : points) {
    EXPECT_EQ(pt.at("TILE") % pt.at("BLOCK_ROWS"), 0) << point_to_string(pt);
    EXPECT_LE(pt.at("TILE") * pt.at("BLOCK_ROWS"), 1024) << point_to_string(pt);
  }
  // TILE 32: BLOCK_ROWS 8, 4, 16, 32; TILE 16: 8, 4, 16; TILE 64: 8, 4, 16 — times PAD 0/1.
  EXPECT_EQ(points.size(), (4u + 3u + 3u) * 2u);
}

TEST(ParamSpace, LimitStopsEarly) {
  Problem p = example("gemm_f32");
  const KernelSpec& k = *p.find_kernel("register_tiled");
  auto n = for_each_point(k, p.dim_scope(), 5, [](const ParamPoint&) { return true; });
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 5u);
}

TEST(ParamSpace, ResolvePointAppliesSetsAndChecksConstraints) {
  Problem p = example("transpose");
  const KernelSpec& k = *p.find_kernel("tiled");
  auto ok = resolve_point(p, k, {{"TILE", 16}, {"BLOCK_ROWS", 16}});
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(point_to_string(*ok), "BLOCK_ROWS=16 PAD=1 TILE=16");
  auto bad = resolve_point(p, k, {{"TILE", 16}, {"BLOCK_ROWS", 32}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "point BLOCK_ROWS=32 PAD=1 TILE=16 of kernel 'tiled' violates constraint 'TILE % "
            "BLOCK_ROWS == 0'");
  EXPECT_GT(bad.error().line, 0);
  EXPECT_EQ(bad.error().field, "kernels[1].constraints[0]");  // the first one it breaks
}

TEST(ParamSpace, ValuesOutsideTheDeclaredListsAreRejected) {
  Problem p = example("transpose");
  auto bad = resolve_point(p, *p.find_kernel("tiled"), {{"TILE", 48}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(
      bad.error().message,
      "TILE=48 is outside the parameter space of kernel 'tiled' (declared values: 32, 16, 64)");
  EXPECT_EQ(bad.error().field, "kernels[1].params.TILE");
}

TEST(Launch, ResolvesExpressionsAndChecksDeviceLimits) {
  Problem p = example("softmax");
  const KernelSpec& k = *p.find_kernel("tuned");
  auto point = resolve_point(p, k, {{"BLOCK", 512}});
  ASSERT_TRUE(point);
  auto l = resolve_launch(p, k, *point, architectural_limits());
  ASSERT_TRUE(l) << l.error().to_string();
  EXPECT_EQ(l->grid, (std::array<std::int64_t, 3>{2048, 1, 1}));
  EXPECT_EQ(l->block, (std::array<std::int64_t, 3>{512, 1, 1}));
  EXPECT_EQ(l->shared_mem, 64);
  ASSERT_EQ(l->args.size(), 4u);
  EXPECT_EQ(l->args[0].tensor, "x");
  EXPECT_EQ(std::get<std::int64_t>(l->args[3].value), 4096);

  DeviceLimits small;
  small.max_threads_per_block = 256;
  small.max_block = {256, 256, 64};
  auto over = resolve_launch(p, k, *point, small);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message,
            "block.x = 512 at BLOCK=512 USE_SHFL=1 VEC=4 is outside the device limit [1, 256]");
  EXPECT_EQ(over.error().field, "kernels[1].block");
  EXPECT_GT(over.error().line, 0);

  DeviceLimits no_smem;
  no_smem.max_shared_per_block_optin = 16;
  auto smem = resolve_launch(p, k, *point, no_smem);
  ASSERT_FALSE(smem);
  EXPECT_EQ(smem.error().message,
            "dynamic shared memory of 64 bytes at BLOCK=512 USE_SHFL=1 VEC=4 exceeds the device "
            "limit of 16 bytes per block");
}

TEST(Launch, GridStrideUsesTheDeviceSmCount) {
  Problem p = example("vector_add");
  const KernelSpec& k = *p.find_kernel("vectorized");
  auto point = resolve_point(p, k, {{"GRID_STRIDE", 1}});
  ASSERT_TRUE(point);
  DeviceLimits l;
  l.sm_count = 100;
  auto launch = resolve_launch(p, k, *point, l);
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->grid[0], 800);
}

TEST(Launch, ScalarThatDoesNotFitI32IsBadInput) {
  auto p =
      load_problem(test::source_dir() / "examples" / "vector_add", {{"n", std::int64_t{1} << 32}});
  ASSERT_TRUE(p);
  auto launch = resolve_launch(*p, *p->find_kernel("naive"), {}, architectural_limits());
  ASSERT_FALSE(launch);
  EXPECT_EQ(launch.error().message,
            "value 4294967296 of 'n' does not fit i32; declare it { expr = ..., dtype = \"i64\" }");
}

}  // namespace
}  // namespace kopt
