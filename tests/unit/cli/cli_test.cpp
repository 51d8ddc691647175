// The kopt binary as a user meets it: exit codes, messages, --json, no GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

CommandResult kopt(std::vector<std::string> args) {
  return test::run_kopt(std::move(args));
}

class Cli : public test::CliFixture {};

TEST_F(Cli, MalformedSpecExitsTwoNamingFileAndLine) {
  TempDir dir("kopt-cli-test");
  std::ofstream(dir.path() / "kopt.toml") << "name = \"x\"\n[dims]\nn = = 3\n";
  CommandResult r = kopt({"check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("kopt.toml:3: malformed TOML"), std::string::npos) << r.err;
}

// Every usage error names its command and, where a near name exists, what was meant
// (the command table's names: commands, steps, flags; the problem's: dims, kernels).
TEST_F(Cli, UsageErrorsNameTheCommandAndWhatWasMeant) {
  fs::path softmax = test::source_dir() / "examples/softmax";
  struct Case {
    std::vector<std::string> args;
    std::string said;
  };
  for (const Case& c : std::vector<Case>{
           {{"bnech", softmax.string()}, "kopt: no command 'bnech' (did you mean 'bench'?)"},
           {{"iter", "opne", "run"},
            "kopt iter: no step of kopt iter 'opne' (did you mean 'open'?)"},
           {{"bench", softmax.string(), "--max-tme", "1"},
            "kopt bench: unknown option --max-tme (did you mean '--max-time'?)"},
           {{"bench", softmax.string(), "--iterations", "3"},
            "kopt bench: unknown option --iterations (an option of kopt optimize)"},
           {{"bench", softmax.string(), "--max-time", "x"},
            "kopt bench: --max-time: 'x' is not a number (it takes a number above 0)"},
           {{"check", softmax.string(), "--dim", "row=256"},
            "--dim row=256: no such dim (did you mean 'rows'?) (the problem's dims: cols, rows)"},
           {{"check", softmax.string(), "--kernel", "tunde"},
            "--kernel tunde: no such kernel (did you mean 'tuned'?) (known: naive, tuned)"},
       }) {
    CommandResult r = kopt(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.said << "\n" << r.err;
    EXPECT_NE(r.err.find(c.said), std::string::npos) << r.err;
  }
}

TEST_F(Cli, BadInputIsJsonToo) {
  CommandResult r = kopt({"check", "no/such/dir", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["error"], "no/such/dir: no such problem directory or file");
}

TEST_F(Cli, UnknownParamAndBadValueAreUsageErrors) {
  fs::path softmax = test::source_dir() / "examples/softmax";
  CommandResult unknown = kopt({"check", softmax.string(), "--set", "WARPS=4"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--set WARPS=4: no selected kernel has a param named 'WARPS'"),
            std::string::npos)
      << unknown.err;
  CommandResult bad = kopt({"check", softmax.string(), "--set", "BLOCK=big"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("the value must be an integer"), std::string::npos) << bad.err;
  CommandResult violates =
      kopt({"check", softmax.string(), "--set", "VEC=2", "--dim", "cols=4095"});
  EXPECT_EQ(violates.exit_code, 2);
  EXPECT_NE(violates.err.find("violates constraint 'cols % VEC == 0'"), std::string::npos)
      << violates.err;
  CommandResult kernel = kopt({"check", softmax.string(), "--kernel", "fast"});
  EXPECT_EQ(kernel.exit_code, 2);
  EXPECT_NE(kernel.err.find("--kernel fast: no such kernel (known: naive, tuned)"),
            std::string::npos);
}

TEST_F(Cli, BenchRejectsPointsOutsideTheSpaceAndUnknownOptionValues) {
  fs::path softmax = test::source_dir() / "examples/softmax";
  CommandResult vs = kopt({"bench", softmax.string(), "--kernel", "tuned", "--vs", "BLOCK=333"});
  EXPECT_EQ(vs.exit_code, 2);
  EXPECT_NE(vs.err.find("BLOCK=333 is outside the parameter space of kernel 'tuned'"),
            std::string::npos)
      << vs.err;
  CommandResult mode = kopt({"bench", softmax.string(), "--mode", "warm"});
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_NE(mode.err.find("--mode: warm not in {cold,hot}"), std::string::npos) << mode.err;
  CommandResult typo = kopt({"bench", softmax.string(), "--set", "BLOCKK=128"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("--set BLOCKK=128: no selected kernel has a param named 'BLOCKK'"),
            std::string::npos)
      << typo.err;
  CommandResult sass_typo = kopt({"sass", softmax.string(), "--set", "BLOCKK=128"});
  EXPECT_EQ(sass_typo.exit_code, 2);
  EXPECT_NE(sass_typo.err.find("no selected kernel has a param named 'BLOCKK'"), std::string::npos)
      << sass_typo.err;
  CommandResult two = kopt({"bench", softmax.string(), "--vs", "BLOCK=128"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("--vs compares one kernel"), std::string::npos) << two.err;
}

TEST_F(Cli, LaunchOverTheDeviceLimitIsBadInput) {
  CommandResult r = kopt({"check", (test::source_dir() / "examples/transpose").string(), "--set",
                          "TILE=64", "--set", "BLOCK_ROWS=32"});
  // TILE * BLOCK_ROWS <= 1024 is a declared constraint, so the spec catches it first.
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("violates constraint"), std::string::npos) << r.err;
}

TEST_F(Cli, CheckWithoutAGpuBuildsEverythingAndSaysSo) {
  if (cuda::probe_driver()) GTEST_SKIP() << "this machine has a GPU; the device tests cover it";
  CommandResult r = kopt({"check", (test::source_dir() / "examples/gemm_f32").string(), "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_FALSE(j["device_error"].get<std::string>().empty());
  EXPECT_EQ(j["arch"], "sm_90");
  ASSERT_EQ(j["kernels"].size(), 3u);
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k["status"], "not_run");
    EXPECT_TRUE(k["build"]["ok"].get<bool>()) << k["build"]["log"];
    EXPECT_GT(k["resources"]["registers"].get<int>(), 0);
  }
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos);
}

TEST_F(Cli, ACompileErrorMarksTheCandidateFailedWithTheUsersLine) {
  if (cuda::probe_driver()) GTEST_SKIP() << "this machine has a GPU; the device tests cover it";
  TempDir dir("kopt-cli-test");
  for (const char* f :
       {"kopt.toml", "ref.cpp", "kernel_naive.cu", "kernel.cu", "kernel_naive.cl", "kernel.cl"})
    fs::copy_file(test::source_dir() / "examples/vector_add" / f, dir.path() / f);
  std::ofstream(dir.path() / "kernel.cu", std::ios::app) << "\nthis is not CUDA;\n";
  CommandResult r = kopt({"check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // a failed candidate, reported
  EXPECT_NE(r.out.find("vectorized     COMPILE_FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel.cu(40): error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("naive          NOT_RUN"), std::string::npos) << r.out;
}

TEST_F(Cli, EnvNeverFailsAndReportsWhatIsMissing) {
  CommandResult r = kopt({"env", "--json", "--no-ncu-probe"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j["driver"].contains("found"));
  EXPECT_TRUE(j["nvrtc"]["found"].get<bool>());
  for (const char* tool : {"nvcc", "ncu", "cuobjdump", "nvdisasm", "compute-sanitizer"})
    EXPECT_TRUE(j["tools"].contains(tool)) << tool;
  EXPECT_TRUE(j["python"].contains("torch"));
}

}  // namespace
}  // namespace kopt
