// `kopt check` reads the precision of a CUDA kernel's matrix instructions from its machine code
// before it runs: the tf32 GEMM of tests/hacks/tf32_matmul, which passes its 1e-2 tolerance on a
// GPU, fails on any machine, a GPU or none; declared acceptable, the same kernel does not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "disassembler.hpp"

namespace kopt {
namespace {

class PrecisionCli : public test::CliFixture {};

TEST_F(PrecisionCli, Tf32OnAnF32ProblemFailsBeforeItRunsUnlessDeclared) {
  KOPT_SKIP_WITHOUT_DISASSEMBLER();
  auto dir = (test::source_dir() / "tests/hacks/tf32_matmul").string();
  CommandResult r = test::run_kopt({"check", dir, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& k : j.at("kernels")) by_name[k.at("kernel")] = k;
  const auto& cheat = by_name.at("cheat");
  EXPECT_EQ(cheat.at("status"), "lower_precision");
  EXPECT_TRUE(cheat.at("seeds").empty());  // refused before it ran
  EXPECT_NE(cheat.at("error").get<std::string>().find("multiplies in tf32 (HMMA.1688.F32.TF32"),
            std::string::npos)
      << cheat.at("error");
  EXPECT_EQ(cheat.at("precision").at("allowed"), "f32");
  EXPECT_TRUE(cheat.at("precision").at("below").get<bool>());

  const auto& declared = by_name.at("declared_tf32");
  EXPECT_NE(declared.at("status"), "lower_precision");
  EXPECT_EQ(declared.at("precision").at("lowest"), "tf32");
  EXPECT_FALSE(declared.at("precision").at("below").get<bool>());

  const auto& honest = by_name.at("honest");
  EXPECT_NE(honest.at("status"), "lower_precision");
  EXPECT_TRUE(honest.at("precision").at("lowest").is_null());  // FFMA only

  // The text says what was found and how to allow it.
  CommandResult text = test::run_kopt({"check", dir, "--kernel", "cheat"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("LOWER_PRECISION"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("precision = \"tf32\""), std::string::npos) << text.out;
}

}  // namespace
}  // namespace kopt
