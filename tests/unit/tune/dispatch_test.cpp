// The dispatch table over shapes (tune/dispatch.hpp): the fewest configurations within 2 % of
// each shape's best among what was confirmed there, and a header that compiles and picks them.
#include "kopt/tune/dispatch.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"

namespace kopt::tune {
namespace {

ShapeResults shape(std::int64_t m, std::vector<std::pair<std::int64_t, double>> by_tile) {
  ShapeResults r;
  r.dims = {{"M", m}, {"N", 4096}};
  r.label = "M=" + std::to_string(m) + " N=4096";
  for (auto [tile, s] : by_tile) r.measured.push_back({ParamPoint{{"TILE", tile}}, s});
  return r;
}

TEST(DispatchTable, TheFewestConfigurationsKeepEveryShapeWithinTolerance) {
  // Small M wants a small tile, large M a large one; 16 covers M=1 and 127, 64 covers 1024 and
  // 4096: two configurations, though 32 is within 2 % at the middle shapes.
  std::vector<ShapeResults> shapes = {
      shape(1, {{16, 10e-6}, {32, 14e-6}}),
      shape(127, {{16, 30e-6}, {32, 30.3e-6}, {64, 40e-6}}),
      shape(1024, {{32, 100e-6}, {64, 101e-6}}),
      shape(4096, {{32, 420e-6}, {64, 400e-6}}),
  };
  DispatchTable t = dispatch_table(shapes);
  ASSERT_EQ(t.configs.size(), 2u);
  ASSERT_EQ(t.rows.size(), 4u);
  for (const auto& r : t.rows) EXPECT_TRUE(r.within) << r.label;
  EXPECT_EQ(t.configs[t.rows[0].config].at("TILE"), 16);
  EXPECT_EQ(t.configs[t.rows[3].config].at("TILE"), 64);
  // One configuration best everywhere: a table of one.
  DispatchTable one = dispatch_table({shape(1, {{16, 1e-6}, {32, 2e-6}}), shape(2, {{16, 3e-6}})});
  EXPECT_EQ(one.configs.size(), 1u);
  // A shape where nothing was confirmed has no configuration, and says so.
  DispatchTable empty = dispatch_table({shape(1, {})});
  ASSERT_EQ(empty.rows.size(), 1u);
  EXPECT_EQ(empty.rows[0].config, -1);
  EXPECT_FALSE(empty.rows[0].within);
}

TEST(DispatchTable, TheHeaderCompilesAndPicksTheNearestShapesConfiguration) {
  DispatchTable t = dispatch_table(
      {shape(1, {{16, 10e-6}, {64, 20e-6}}), shape(4096, {{16, 900e-6}, {64, 400e-6}})});
  TempDir dir("kopt-dispatch");
  ASSERT_TRUE(write_text_atomic(dir.path() / "d.hpp", dispatch_header(t, "gemm_tiled", "a test")));
  ASSERT_TRUE(write_text_atomic(dir.path() / "main.cpp",
                                "#include \"d.hpp\"\n"
                                "int main() {\n"
                                "  auto small = kopt_dispatch::gemm_tiled_select(2, 4096);\n"
                                "  auto large = kopt_dispatch::gemm_tiled_select(3000, 4000);\n"
                                "  return small.TILE == 16 && large.TILE == 64 ? 0 : 1;\n"
                                "}\n"));
  SystemCommandRunner runner;
  auto built = runner.run({"c++", "-std=c++17", "-Wall", "-Werror", "-o",
                           (dir.path() / "pick").string(), (dir.path() / "main.cpp").string()},
                          std::chrono::seconds(120));
  ASSERT_TRUE(built.ok()) << built.err;
  EXPECT_TRUE(runner.run({(dir.path() / "pick").string()}, std::chrono::seconds(10)).ok());
}

}  // namespace
}  // namespace kopt::tune
