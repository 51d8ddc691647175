// The SASS parser on recorded dumps of every example (tests/fixtures/sass/README.md).
#include "kopt/tools/sass.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

std::vector<SassFunction> dump(const std::string& name) {
  auto text = read_text_file(test::source_dir() / "tests/fixtures/sass" / name);
  EXPECT_TRUE(text) << name;
  return parse_sass(text ? *text : "");
}

TEST(SassParser, EveryRecordedExampleDumpParses) {
  int files = 0;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests/fixtures/sass")) {
    if (e.path().extension() != ".sass") continue;
    ++files;
    auto functions = parse_sass(*read_text_file(e.path()));
    // The examples' dumps hold one kernel each; the forms' dumps (forms.cu, ...) several.
    bool forms = e.path().filename().string().find("_sm") != std::string::npos;
    ASSERT_TRUE(forms ? !functions.empty() : functions.size() == 1u) << e.path();
    for (const SassFunction& f : functions) {
      EXPECT_GT(f.instructions.size(), 10u) << e.path();
      for (std::size_t i = 0; i < f.instructions.size(); ++i) {
        const auto& in = f.instructions[i];
        EXPECT_FALSE(in.opcode.empty());
        for (char c : in.opcode) {
          EXPECT_TRUE(std::isupper(static_cast<unsigned char>(c)) ||
                      std::isdigit(static_cast<unsigned char>(c)) || c == '_')
              << in.opcode;
        }
        if (i > 0) {
          EXPECT_EQ(in.address, f.instructions[i - 1].address + 16)
              << e.path() << " at " << i;  // sm_90: 16 bytes
        }
      }
      // Every kernel exits, and its code ends in a self-branch followed only by NOP padding.
      auto last = std::find_if(f.instructions.rbegin(), f.instructions.rend(),
                               [](const auto& in) { return in.opcode != "NOP"; });
      ASSERT_NE(last, f.instructions.rend());
      EXPECT_EQ(last->opcode, "BRA") << e.path();
      EXPECT_TRUE(std::any_of(f.instructions.begin(), f.instructions.end(),
                              [](const auto& in) { return in.opcode == "EXIT"; }));
    }
  }
  // 13 example kernels, a fast-tanh GELU, one cuobjdump layout, 5 dumps of forms, 5 of gemm_bf16,
  // one of the precision forms
  EXPECT_EQ(files, 26);
}

TEST(SassParser, SplitsPredicateOpcodeModifiersAndOperands) {
  auto f = dump("softmax_tuned.nvdisasm.sass");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, "softmax_tuned");
  const SassInstruction* ldg = nullptr;
  const SassInstruction* predicated = nullptr;
  for (const auto& i : f[0].instructions) {
    if (!ldg && i.opcode == "LDG") ldg = &i;
    if (!predicated && !i.predicate.empty()) predicated = &i;
  }
  ASSERT_TRUE(ldg);
  EXPECT_EQ(ldg->modifiers, (std::vector<std::string>{"E", "128", "CONSTANT"}));
  EXPECT_EQ(ldg->operands, "R4, desc[UR8][R4.64]");
  EXPECT_TRUE(ldg->has_modifier("128"));
  ASSERT_TRUE(predicated);
  EXPECT_EQ(predicated->predicate, "@P3");
  EXPECT_EQ(predicated->opcode, "BRA");
}

TEST(SassParser, NvdisasmAndCuobjdumpAgreeInstructionByInstruction) {
  auto a = dump("softmax_tuned.nvdisasm.sass");
  auto b = dump("softmax_tuned.cuobjdump.sass");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].name, b[0].name);
  ASSERT_EQ(a[0].instructions.size(), b[0].instructions.size());
  for (std::size_t i = 0; i < a[0].instructions.size(); ++i) {
    EXPECT_EQ(a[0].instructions[i].opcode, b[0].instructions[i].opcode) << i;
    EXPECT_EQ(a[0].instructions[i].modifiers, b[0].instructions[i].modifiers) << i;
    EXPECT_EQ(a[0].instructions[i].address, b[0].instructions[i].address) << i;
  }
}

TEST(SassParser, FindsFunctionsByTheirSymbol) {
  std::string text =
      ".text._Z6kernelPf:\n        /*0000*/                   EXIT ;\n"
      ".text.other:\n        /*0000*/              @!PT LDS.U8 R0, [R1] ;\n";
  auto f = parse_sass(text);
  ASSERT_EQ(f.size(), 2u);
  ASSERT_TRUE(find_function(f, "other"));
  EXPECT_EQ(find_function(f, "other")->instructions[0].predicate, "@!PT");
  EXPECT_EQ(find_function(f, "other")->instructions[0].modifiers, (std::vector<std::string>{"U8"}));
  EXPECT_FALSE(find_function(f, "missing"));
}

}  // namespace
}  // namespace kopt
