// The precision of matrix instructions, read from recorded SASS (tests/fixtures/sass): every
// operand type kopt knows, and the verdict against a problem's precision.
#include "kopt/analysis/sass_precision.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

std::vector<SassFunction> dump(const std::string& name) {
  auto text =
      read_text_file(test::source_dir() / "tests/fixtures/sass" / (name + ".nvdisasm.sass"));
  EXPECT_TRUE(text) << name;
  return parse_sass(text ? *text : "");
}

// The lowest operand precision of each function that has a matrix instruction.
std::map<std::string, std::string> lowest_by_function(const std::string& name) {
  std::map<std::string, std::string> out;
  for (const auto& f : dump(name)) {
    auto finding = judge_precision(mma_forms({f}), {Precision::f32, "test"});
    if (finding.lowest) out[f.name] = std::string(precision_name(*finding.lowest));
  }
  return out;
}

TEST(SassPrecision, ReadsEveryOperandTypeOfTheRecordedDumps) {
  // precision.cu on sm_90: tf32, f16 with an f16 accumulator, s8, f64; an FFMA kernel has none.
  EXPECT_EQ(lowest_by_function("precision_sm90"),
            (std::map<std::string, std::string>{{"mma_tf32", "tf32"},
                                                {"mma_f16_acc_f16", "f16"},
                                                {"mma_s8", "int8"},
                                                {"mma_f64", "f64"}}));
  // forms.cu: mma.sync bf16 (HMMA.16816.F32.BF16); fp8.cu: QMMA on sm_89, and on sm_90, where
  // the fp8 mma.sync runs as HMMA on f16 operands.
  auto forms = lowest_by_function("forms_sm90");
  ASSERT_FALSE(forms.empty());
  for (const auto& [fn, p] : forms) EXPECT_EQ(p, "bf16") << fn;
  for (const auto& [fn, p] : lowest_by_function("fp8_sm89")) EXPECT_EQ(p, "fp8") << fn;
  for (const auto& [fn, p] : lowest_by_function("fp8_sm90")) EXPECT_EQ(p, "f16") << fn;
  // hopper.cu: wgmma bf16 (HGMMA...BF16) and fp8 (QGMMA...E4M3.E4M3).
  std::set<std::string> hopper;
  for (const auto& [fn, p] : lowest_by_function("hopper_sm90a")) hopper.insert(p);
  EXPECT_EQ(hopper, (std::set<std::string>{"bf16", "fp8"}));
  // Kernels without tensor cores: nothing to say.
  EXPECT_TRUE(lowest_by_function("gemm_f32_register_tiled").empty());
  EXPECT_TRUE(lowest_by_function("softmax_tuned").empty());
}

TEST(SassPrecision, AnInstructionThatNeverRunsIsNoEvidence) {
  auto f = parse_sass(
      "\t.text.k:\n        /*0000*/                   @!PT HMMA.1688.F32.TF32 R4, R8, R12, R4 ;\n"
      "        /*0010*/                   FFMA R1, R2, R3, R1 ;\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(mma_forms(f).empty());
}

TEST(SassPrecision, JudgesAgainstTheAllowedPrecisionAndSaysHowToAllowIt) {
  auto forms = mma_forms(dump("precision_sm90"));
  auto in_f32 = judge_precision(forms, {Precision::f32, "the problem's tensors"});
  EXPECT_TRUE(in_f32.below());
  EXPECT_EQ(in_f32.lowest, Precision::int8);
  ASSERT_FALSE(in_f32.forms.empty());
  EXPECT_EQ(in_f32.forms.front().form, "IMMA.16832.S8.S8");  // lowest first
  std::string why = in_f32.explain();
  EXPECT_NE(why.find("multiplies in int8 (IMMA.16832.S8.S8 x1 in mma_s8"), std::string::npos)
      << why;
  EXPECT_NE(why.find("HMMA.1688.F32.TF32 x1 in mma_tf32"), std::string::npos) << why;
  EXPECT_EQ(why.find("DMMA"), std::string::npos) << why;  // f64 is above f32: not a finding
  EXPECT_NE(why.find("precision = \"int8\""), std::string::npos) << why;

  std::vector<MmaForm> tf32_only;
  for (const auto& f : forms)
    if (f.operands == Precision::tf32 || f.operands == Precision::f64) tf32_only.push_back(f);
  EXPECT_TRUE(judge_precision(tf32_only, {Precision::f32, "t"}).below());
  EXPECT_FALSE(judge_precision(tf32_only, {Precision::tf32, "t"}).below());
  EXPECT_FALSE(judge_precision(tf32_only, {Precision::bf16, "t"}).below());
  EXPECT_FALSE(judge_precision({}, {Precision::f64, "t"}).below());  // no matrix instruction
  // f16 and bf16 are one tier: a bf16 problem may multiply f16 operands.
  EXPECT_TRUE(precision_at_least(Precision::f16, Precision::bf16));
  EXPECT_TRUE(precision_at_least(Precision::bf16, Precision::f16));
  EXPECT_FALSE(precision_at_least(Precision::fp8, Precision::bf16));
}

TEST(SassPrecision, FormsSurviveTheBuildCachesJson) {
  auto forms = mma_forms(dump("precision_sm90"));
  auto back = forms_from_json(forms_to_json(forms));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), forms.size());
  for (std::size_t i = 0; i < forms.size(); ++i) {
    EXPECT_EQ((*back)[i].form, forms[i].form);
    EXPECT_EQ((*back)[i].operands, forms[i].operands);
    EXPECT_EQ((*back)[i].count, forms[i].count);
  }
  EXPECT_FALSE(forms_from_json(nlohmann::json::parse(R"([{"operands": "f7"}])")));
}

TEST(SassPrecision, TheAllowedPrecisionComesFromTheKernelTheProblemOrItsTensors) {
  auto p = load_problem(test::source_dir() / "tests/hacks/tf32_matmul");
  ASSERT_TRUE(p) << p.error().to_string();
  auto honest = allowed_precision(*p, p->find_kernel("honest"));
  EXPECT_EQ(honest.precision, Precision::f32);
  EXPECT_EQ(honest.from, "the problem's tensors");
  auto declared = allowed_precision(*p, p->find_kernel("declared_tf32"));
  EXPECT_EQ(declared.precision, Precision::tf32);
  EXPECT_NE(declared.from.find("declared_tf32"), std::string::npos);
  p->precision = Precision::bf16;
  EXPECT_EQ(allowed_precision(*p, p->find_kernel("honest")).precision, Precision::bf16);
  // The lowest float among the tensors; integer indices do not lower it, 8-bit data does.
  Problem q;
  q.tensors = {{"x", DType::f32}, {"i", DType::i64}};
  EXPECT_EQ(allowed_precision(q, nullptr).precision, Precision::f32);
  q.tensors.push_back({"h", DType::bf16});
  EXPECT_EQ(allowed_precision(q, nullptr).precision, Precision::bf16);
  q.tensors.push_back({"w", DType::i8});
  EXPECT_EQ(allowed_precision(q, nullptr).precision, Precision::int8);
}

}  // namespace
}  // namespace kopt
