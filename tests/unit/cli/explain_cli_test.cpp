// `kopt analyze`, `kopt specs` and `kopt target` as a user meets them: no GPU needed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

CommandResult kopt(std::vector<std::string> args) {
  return test::run_kopt(std::move(args));
}

std::string fixture(const std::string& name) {
  return (test::source_dir() / "tests/fixtures/ncu/h100" / name).string();
}

class ExplainCli : public test::CliFixture {
 protected:
  TempDir m_dir{"kopt-explain-cli"};
};

TEST_F(ExplainCli, AnalyzeARecordedCsv) {
  CommandResult r = kopt({"analyze", fixture("transpose_naive.csv"), "--problem",
                          (test::source_dir() / "examples/transpose").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layout"], "wide");
  EXPECT_EQ(j["device"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["analysis"]["spec"], "h100-sxm");
  EXPECT_EQ(j["analysis"]["bottleneck"]["class"], "memory-bound");
  EXPECT_EQ(j["analysis"]["roofline"]["points"].size(), 2u);  // cost formulas and ncu counters
  CommandResult human = kopt({"analyze", fixture("transpose_naive.csv")});
  ASSERT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("## Bottleneck: memory-bound"), std::string::npos);
  EXPECT_NE(human.out.find("uncoalesced global stores"), std::string::npos);
}

TEST_F(ExplainCli, AnalyzeBadInput) {
  CommandResult missing = kopt({"analyze", "no-such.csv"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such.csv"), std::string::npos);
  fs::path other = m_dir.path() / "other.csv";
  ASSERT_TRUE(write_text_atomic(other, "\"name\",\"time\"\n\"x\",\"1\"\n"));
  CommandResult wrong = kopt({"analyze", other.string()});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("other.csv:1"), std::string::npos) << wrong.err;
  CommandResult no_kernel = kopt({"analyze", fixture("softmax_tuned.csv"), "--kernel", "gemm"});
  EXPECT_EQ(no_kernel.exit_code, 2);
  EXPECT_NE(no_kernel.err.find("no kernel named 'gemm'"), std::string::npos);
  CommandResult bad_gpu = kopt({"analyze", fixture("softmax_tuned.csv"), "--gpu", "voodoo2"});
  EXPECT_EQ(bad_gpu.exit_code, 2);
}

TEST_F(ExplainCli, SpecsListAndOneGpuWithSources) {
  CommandResult all = kopt({"specs"});
  ASSERT_EQ(all.exit_code, 0);
  EXPECT_NE(all.out.find("h100-sxm"), std::string::npos);
  CommandResult one = kopt({"specs", "NVIDIA H100 80GB HBM3", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["gpu"]["id"], "h100-sxm");
  EXPECT_NE(
      j["gpu"]["values"]["memory_bandwidth_gbs"]["source"].get<std::string>().find("whitepaper"),
      std::string::npos);
  EXPECT_EQ(j["gpu"]["values"]["boost_clock_mhz"]["status"], "UNKNOWN");
  CommandResult unknown = kopt({"specs", "voodoo2"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("h100-sxm"), std::string::npos);  // lists what is known
}

TEST_F(ExplainCli, TargetWritesTargetMd) {
  fs::path out = m_dir.path() / "target.md";
  CommandResult r = kopt({"target", (test::source_dir() / "examples/gemm_f32").string(), "--gpu",
                          "h100-sxm", "--out", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["bound"], "compute");
  EXPECT_NEAR(j["target_s"].get<double>(), 2.0 * 1024 * 1024 * 1024 / 66.9e12 / 0.9, 1e-9);
  auto md = read_text_file(out);
  ASSERT_TRUE(md);
  EXPECT_NE(md->find("Peak FP32 TFLOPS"), std::string::npos);  // the source of the roof
  EXPECT_NE(md->find("compute-bound"), std::string::npos);
  CommandResult vec = kopt({"target", (test::source_dir() / "examples/vector_add").string(),
                            "--gpu", "h100-sxm", "--out", out.string(), "--json"});
  ASSERT_EQ(vec.exit_code, 0) << vec.err;
  EXPECT_EQ(nlohmann::json::parse(vec.out)["bound"], "memory");
}

TEST_F(ExplainCli, ProfileWithoutNcuIsAnEnvironmentError) {
  if (find_program("ncu", cuda_tool_dirs()))
    GTEST_SKIP() << "ncu is installed here: the device tests profile for real";
  CommandResult r = kopt({"profile", (test::source_dir() / "examples/softmax").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("ncu (Nsight Compute) not found"), std::string::npos) << r.err;
  CommandResult bad = kopt({"profile", (test::source_dir() / "examples/softmax").string(), "--set",
                            "full", "--set", "basic"});
  EXPECT_EQ(bad.exit_code, 2);
  CommandResult question =
      kopt({"profile", (test::source_dir() / "examples/softmax").string(), "--question", "cache"});
  EXPECT_EQ(question.exit_code, 2);
  EXPECT_NE(question.err.find("'cache'"), std::string::npos);
}

}  // namespace
}  // namespace kopt
