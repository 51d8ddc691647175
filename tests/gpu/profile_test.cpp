// Device tests of `kopt profile` (label "gpu"): ncu on real kernels, the files it leaves,
// and failed candidates staying results.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "kopt_binary.hpp"
#include "kopt_json.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

#define KOPT_SKIP_WITHOUT_NCU()                        \
  if (!find_program("ncu", cuda_tool_dirs()))          \
  GTEST_SKIP() << "ncu (Nsight Compute) is not installed here"

class Profile : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", m_dir.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }
  json kopt(std::vector<std::string> args, int& rc) {
    args.insert(args.end(), {"--out", (m_dir.path() / "out").string()});
    return test::kopt_json(std::move(args), rc);
  }
  std::string example(const char* name) { return (test::source_dir() / "examples" / name).string(); }
  TempDir m_dir{"kopt-profile-test"};
};

TEST_F(Profile, NaiveTransposeIsMemoryBoundWithPoorCoalescing) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json j = kopt({"profile", example("transpose"), "--kernel", "naive"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["kernels"].size(), 1u);
  const json& k = j["kernels"][0];
  EXPECT_EQ(k["status"], "ok");
  EXPECT_NE(k["ncu_command"].get<std::string>().find("--clock-control none"), std::string::npos);
  const json& a = k["analysis"];
  EXPECT_EQ(a["bottleneck"]["class"], "memory-bound");
  bool uncoalesced = false;
  for (const auto& f : a["bottleneck"]["secondary"]) uncoalesced = uncoalesced || f["id"] == "uncoalesced_global";
  EXPECT_TRUE(uncoalesced);
  EXPECT_EQ(a["roofline"]["memory_roof"]["origin"], "spec");  // no ceilings measured in this fresh cache
  fs::path dir = k["dir"].get<std::string>();
  for (const char* f : {"summary.md", "details.md", "analysis.json", "profile.csv", "profile.ncu-rep"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
}

TEST_F(Profile, SeveralLaunchesAreAveraged) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json j = kopt({"profile", example("softmax"), "--kernel", "tuned", "--question", "sol,launch", "--launch-skip", "1",
                 "--launch-count", "3"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["kernels"][0]["analysis"]["launches"], 3);
  EXPECT_EQ(j["kernels"][0]["collection"], "questions sol,launch");
}

TEST_F(Profile, AFaultingKernelIsAFailedCandidate) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json j = kopt({"profile", (test::source_dir() / "tests/fixtures/problems/faults").string(), "--kernel",
                 "out_of_bounds", "--kernel", "good_first"},
                rc);
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(j["kernels"].size(), 2u);
  std::map<std::string, std::string> status;
  for (const auto& k : j["kernels"]) status[k["kernel"]] = k["status"];
  EXPECT_EQ(status["out_of_bounds"], "run_failed") << j.dump(2);
  EXPECT_EQ(status["good_first"], "ok") << j.dump(2);
}

}  // namespace
}  // namespace kopt
