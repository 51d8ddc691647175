// problem_from_kernelbench on facts recorded from a real run of the import script
// (tests/fixtures/kernelbench/README.md says how): no Python needed here.
#include "kopt/problem/kernelbench.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

nlohmann::json recorded_facts() {
  auto text =
      read_text_file(test::source_dir() / "tests/fixtures/kernelbench/conv_then_sort.facts.json");
  EXPECT_TRUE(text) << text.error().message;
  return nlohmann::json::parse(*text);
}

TEST(KernelbenchImport, WeightsBecomeInputsAndTheProblemLoads) {
  auto p = problem_from_kernelbench(recorded_facts(), "conv_then_sort.py");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->name, "conv_then_sort");
  // The input keeps its size constants; the model's weights are inputs named after them.
  EXPECT_NE(p->kopt_toml.find("shape = [\"batch_size\", \"in_channels\", \"height\", \"width\"]"),
            std::string::npos)
      << p->kopt_toml;
  EXPECT_NE(p->kopt_toml.find("name = \"conv_weight\""), std::string::npos);
  EXPECT_NE(p->kopt_toml.find("name = \"conv_bias\""), std::string::npos);
  // nn's kaiming-uniform weights are drawn as a uniform over the range they had.
  EXPECT_NE(p->kopt_toml.find("init = { kind = \"uniform\", low = -0.192, high = 0.1913 }"),
            std::string::npos)
      << p->kopt_toml;
  EXPECT_NE(p->ref_py.find("\"conv.weight\": \"conv_weight\""), std::string::npos) << p->ref_py;
  // Two results: two outputs; the constant argument is passed as get_inputs() gave it.
  EXPECT_NE(p->kopt_toml.find("name = \"out0\""), std::string::npos);
  EXPECT_NE(p->kopt_toml.find("name = \"out1\""), std::string::npos);
  EXPECT_NE(p->ref_py.find("(\"constant\", 0.5)"), std::string::npos) << p->ref_py;

  TempDir dir("kopt-kb-test");
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", p->kopt_toml));
  ASSERT_TRUE(write_text_atomic(dir.path() / "ref.py", p->ref_py));
  auto loaded = load_problem(dir.path());
  ASSERT_TRUE(loaded) << loaded.error().to_string() << "\n" << p->kopt_toml;
  EXPECT_TRUE(loaded->kernels.empty());
  EXPECT_EQ(loaded->tensors.size(), 5u);  // x, conv_weight, conv_bias, out0, out1
}

TEST(KernelbenchImport, AnOperatorWithoutAFormulaLeavesFlopsToThePersonAndSaysSo) {
  auto p = problem_from_kernelbench(recorded_facts(), "conv_then_sort.py");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kopt_toml.find("\nflops = "), std::string::npos) << p->kopt_toml;
  EXPECT_NE(p->kopt_toml.find("\nbytes = "), std::string::npos);
  bool said = false;
  for (const auto& n : p->notes) said = said || n.find("no formula for sort") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(KernelbenchImport, AnExtentThatIsNoConstantBecomesADimAndIsNoted) {
  auto p = problem_from_kernelbench(recorded_facts(), "conv_then_sort.py");
  ASSERT_TRUE(p);
  // The convolution's output is [2, 8, 16, 18]: 16 is no constant of the file.
  EXPECT_NE(p->kopt_toml.find("out0_d2 = 16"), std::string::npos) << p->kopt_toml;
}

// A bool argument of forward (KernelBench's 93_masked_cumsum's mask): a u8 tensor of 0s and 1s,
// handed to the model (and to a ModelNew) as bool.
TEST(KernelbenchImport, ABoolArgumentIsDrawnAsBytesAndGivenToForwardAsBool) {
  auto facts = recorded_facts();
  facts["inputs"][0]["dtype"] = "bool";
  auto p = problem_from_kernelbench(facts, "conv_then_sort.py");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_NE(p->kopt_toml.find("name = \"x\"\ndtype = \"u8\""), std::string::npos) << p->kopt_toml;
  EXPECT_NE(p->kopt_toml.find("init = { kind = \"randint\", low = 0, high = 2 }"),
            std::string::npos)
      << p->kopt_toml;
  EXPECT_NE(p->ref_py.find("\nBOOL_INPUTS = [\"x\"]"), std::string::npos) << p->ref_py;
  EXPECT_NE(p->ref_py.find("kw[v].bool() if v in BOOL_INPUTS"), std::string::npos) << p->ref_py;
  EXPECT_NE(p->model_new_adapter.find("\n_KOPT_BOOL_INPUTS = [\"x\"]"), std::string::npos);
  EXPECT_NE(p->model_new_adapter.find("kw[v].bool() for v in _KOPT_BOOL_INPUTS"), std::string::npos)
      << p->model_new_adapter;
  TempDir dir("kopt-kb-bool");
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", p->kopt_toml));
  ASSERT_TRUE(write_text_atomic(dir.path() / "ref.py", p->ref_py));
  auto loaded = load_problem(dir.path());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->find_tensor("x")->dtype, DType::u8);
}

TEST(KernelbenchImport, ABoolResultIsBadInputNamingIt) {
  auto facts = recorded_facts();
  facts["outputs"][0]["dtype"] = "bool";
  auto p = problem_from_kernelbench(facts, "conv_then_sort.py");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
  EXPECT_NE(p.error().message.find("'out0'"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("bool"), std::string::npos) << p.error().message;
}

TEST(KernelbenchImport, TheScriptsOwnErrorIsPassedOn) {
  auto p = problem_from_kernelbench({{"error", "x.py has no Model"}}, "x.py");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("has no Model"), std::string::npos);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// A pooling window given as one size spans every spatial axis of the pool's dimension.
TEST(KernelbenchImport, APoolingWindowSpansThePoolsOwnAxes) {
  for (auto [name, flops] :
       {std::pair{"max_pool1d", "3 * n * c * w"}, std::pair{"avg_pool3d", "27 * n * c * w"},
        std::pair{"max_pool2d_with_indices", "9 * n * c * w"}}) {
    nlohmann::json facts = {
        {"globals",
         {{{"name", "n"}, {"value", 2}},
          {{"name", "c"}, {"value", 4}},
          {{"name", "w"}, {"value", 30}}}},
        {"inputs",
         {{{"name", "x"},
           {"tensor", true},
           {"shape", {2, 4, 32}},
           {"dtype", "f32"},
           {"stats", nlohmann::json::object()}}}},
        {"parameters", nlohmann::json::array()},
        {"outputs", {{{"shape", {2, 4, 30}}, {"dtype", "f32"}}}},
        {"ops",
         {{{"name", name}, {"args", {{2, 4, 32}}}, {"result", {2, 4, 30}}, {"kernel_size", {3}}}}}};
    auto p = problem_from_kernelbench(facts, "pool.py");
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_NE(p->kopt_toml.find(std::string("flops = \"") + flops + "\""), std::string::npos)
        << name << "\n"
        << p->kopt_toml;
  }
}

}  // namespace
}  // namespace kopt
