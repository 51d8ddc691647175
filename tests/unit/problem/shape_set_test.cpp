// Shapes as axes (problem/shape_set.hpp): --axis flags and kopt.toml's [axes] as the product of
// their values, the errors that name what is wrong, and the summary over shapes.
#include "kopt/problem/shape_set.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
namespace {

Problem two_dims() {
  Problem p;
  p.dims = {Dim{"M", 64, {}}, Dim{"N", 32, {}}};
  return p;
}

TEST(ShapeSet, AxesAreTheProductOfTheirValuesInTheOrderGiven) {
  auto s = shape_set(two_dims(), {"M=1,16,4096", "N=7,4099"});
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_EQ(s->size(), 6u);
  EXPECT_EQ(s->front().label(), "M=1 N=7");
  EXPECT_EQ((*s)[1].label(), "M=1 N=4099");
  EXPECT_EQ(s->back().label(), "M=4096 N=4099");
  auto none = shape_set(two_dims(), {});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty()) << "no axes: the problem's one shape";
}

TEST(ShapeSet, KoptTomlAxesApplyUnlessTheCommandLineNamesSome) {
  Problem p = two_dims();
  p.axes = {{"N", {1, 2}}};
  auto from_toml = shape_set(p, {});
  ASSERT_TRUE(from_toml);
  EXPECT_EQ(from_toml->size(), 2u);
  auto flags = shape_set(p, {"M=3"});
  ASSERT_TRUE(flags);
  ASSERT_EQ(flags->size(), 1u);
  EXPECT_EQ(flags->front().label(), "M=3");
}

TEST(ShapeSet, BadAxesAreNamed) {
  for (const char* bad : {"K=1,2", "M", "M=1,x", "M=0", "M=1,,2"}) {
    auto s = shape_set(two_dims(), {bad});
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(s.error().field, "--axis") << bad;
  }
  EXPECT_FALSE(shape_set(two_dims(), {"M=1", "M=2"}));
}

TEST(ShapeSet, TheLoaderReadsAxesAndNamesTheLineOfABadOne) {
  TempDir dir("kopt-axes");
  std::string base =
      "name = \"x\"\n[dims]\nn = 64\n[[tensors]]\nname = \"y\"\ndtype = \"f32\"\nshape = "
      "[\"n\"]\nrole = \"output\"\n[reference]\nkind = \"python\"\nsource = \"ref.py\"\n";
  ASSERT_TRUE(write_text_atomic(dir.path() / "ref.py", "def reference(**kw):\n    pass\n"));
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", base + "[axes]\nn = [1, 127, 4096]\n"));
  auto p = load_problem(dir.path());
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ(p->axes.size(), 1u);
  EXPECT_EQ(p->axes[0].second, (std::vector<std::int64_t>{1, 127, 4096}));
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", base + "[axes]\nm = [1]\n"));
  auto bad = load_problem(dir.path());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "axes.m");
  EXPECT_EQ(bad.error().line, 13);
}

TEST(ShapeSet, ZippedAxesTakeTheirValuesTogether) {
  Problem p = two_dims();
  p.dims.push_back(Dim{"K", 8, {}});
  auto s = shape_set(p, {"M=1,4096", "N=7,4099", "K=2,3"}, {"M,N"});
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_EQ(s->size(), 4u) << "2 zipped pairs x 2 values of K, not 8";
  EXPECT_EQ((*s)[0].label(), "M=1 N=7 K=2");
  EXPECT_EQ((*s)[1].label(), "M=1 N=7 K=3");
  EXPECT_EQ((*s)[3].label(), "M=4096 N=4099 K=3");
  auto uneven = shape_set(p, {"M=1,2,3", "N=7,4099"}, {"M,N"});
  ASSERT_FALSE(uneven);
  EXPECT_EQ(uneven.error().field, "--zip");
  EXPECT_FALSE(shape_set(p, {"M=1,2"}, {"M,K"})) << "K is no axis given";
  EXPECT_FALSE(shape_set(p, {"M=1,2"}, {"M"})) << "a zip of one axis";
}

TEST(ShapeSet, NamedShapesComeAfterTheAxesAndFlagsReplaceBoth) {
  Problem p = two_dims();
  p.axes = {{"M", {1, 2}}, {"N", {3, 4}}};
  p.axis_zips = {{"M", "N"}};
  p.shapes = {{"decode", {{"M", 1}, {"N", 4096}}}};
  p.goal_weights = {{"decode", 3.0}};
  auto s = shape_set(p, {});
  ASSERT_TRUE(s);
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[1].label(), "M=2 N=4");
  EXPECT_EQ((*s)[2].display(), "decode (M=1 N=4096)");
  EXPECT_DOUBLE_EQ(goal_weight(p, (*s)[2]), 3.0);
  EXPECT_DOUBLE_EQ(goal_weight(p, (*s)[0]), 1.0);
  auto flags = shape_set(p, {"M=5"});
  ASSERT_TRUE(flags);
  EXPECT_EQ(flags->size(), 1u) << "--axis replaces [axes] and [shapes]";
}

TEST(ShapeSet, TheLoaderReadsZipsNamedShapesAndTheGoalAndNamesWhatIsWrong) {
  TempDir dir("kopt-shapes");
  std::string base =
      "name = \"x\"\n[dims]\nM = 64\nN = 64\n[[tensors]]\nname = \"y\"\ndtype = \"f32\"\n"
      "shape = [\"M\", \"N\"]\nrole = \"output\"\n[reference]\nkind = \"python\"\n"
      "source = \"ref.py\"\n";
  ASSERT_TRUE(write_text_atomic(dir.path() / "ref.py", "def reference(**kw):\n    pass\n"));
  auto load = [&](const std::string& extra) {
    EXPECT_TRUE(write_text_atomic(dir.path() / "kopt.toml", base + extra));
    return load_problem(dir.path());
  };
  auto p = load(
      "[axes]\nM = [1, 2]\nN = [3, 4]\nzip = [[\"M\", \"N\"]]\n[shapes]\ndecode = { M = 1 }\n"
      "[goal]\nkind = \"throughput\"\nweights = { decode = 2 }\n");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->axis_zips, (std::vector<std::vector<std::string>>{{"M", "N"}}));
  ASSERT_EQ(p->shapes.size(), 1u);
  EXPECT_EQ(p->shapes[0].name, "decode");
  EXPECT_EQ(p->goal, Problem::Goal::throughput);
  EXPECT_DOUBLE_EQ(p->goal_weights.at("decode"), 2.0);
  struct Bad {
    const char* extra;
    const char* field;
  };
  for (const Bad& b : {Bad{"[axes]\nM = [1, 2]\nN = [3]\nzip = [[\"M\", \"N\"]]\n", "axes.zip[0]"},
                       Bad{"[axes]\nM = [1]\nzip = [[\"M\", \"K\"]]\n", "axes.zip[0]"},
                       Bad{"[shapes]\ndecode = { Q = 1 }\n", "shapes.decode.Q"},
                       Bad{"[shapes]\ndecode = 1\n", "shapes.decode"},
                       Bad{"[goal]\nkind = \"fast\"\n", "goal.kind"},
                       Bad{"[goal]\nweights = { decode = 0 }\n", "goal.weights.decode"},
                       Bad{"[check]\nboundary_shapes = 1\n", "check.boundary_shapes"}}) {
    auto bad = load(b.extra);
    ASSERT_FALSE(bad) << b.extra;
    EXPECT_EQ(bad.error().field, b.field) << bad.error().to_string();
    EXPECT_GT(bad.error().line, 0) << b.extra;
  }
}

TEST(ShapeSet, OverShapesGivesBestTypicalWorstAndTheGeometricMean) {
  auto o = over_shapes({2.0, 0.5, 1.0, 8.0});
  EXPECT_EQ(o.n, 4u);
  EXPECT_DOUBLE_EQ(o.best, 8.0);
  EXPECT_DOUBLE_EQ(o.worst, 0.5);
  EXPECT_DOUBLE_EQ(o.typical, 1.5);
  EXPECT_NEAR(o.geomean, std::pow(8.0, 0.25), 1e-12);  // (2 * 0.5 * 1 * 8)^(1/4)
  auto times = over_shapes({3e-6, 1e-6, 0.0}, false);  // a time: lower is better; 0 left out
  EXPECT_EQ(times.n, 2u);
  EXPECT_DOUBLE_EQ(times.best, 1e-6);
}

}  // namespace
}  // namespace kopt
