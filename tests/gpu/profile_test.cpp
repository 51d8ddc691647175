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

#define KOPT_SKIP_WITHOUT_NCU()               \
  if (!find_program("ncu", cuda_tool_dirs())) \
  GTEST_SKIP() << "ncu (Nsight Compute) is not installed here"

class Profile : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", m_dir.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }
  json kopt(std::vector<std::string> args, int& rc) {
    args.insert(args.end(), {"--out", (m_dir.path() / "out").string()});
    return test::kopt_json(std::move(args), rc);
  }
  std::string example(const char* name) {
    return (test::source_dir() / "examples" / name).string();
  }
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
  for (const auto& f : a["bottleneck"]["secondary"])
    uncoalesced = uncoalesced || f["id"] == "uncoalesced_global";
  EXPECT_TRUE(uncoalesced);
  // A fresh cache: the ceilings are measured on first use (roofs.hpp), not read from the spec.
  EXPECT_EQ(a["roofline"]["memory_roof"]["origin"], "measured");
  fs::path dir = k["dir"].get<std::string>();
  for (const char* f :
       {"summary.md", "details.md", "analysis.json", "profile.csv", "profile.ncu-rep"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
}

TEST_F(Profile, SeveralLaunchesAreAveraged) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json j = kopt({"profile", example("softmax"), "--kernel", "tuned", "--question", "sol,launch",
                 "--launch-skip", "1", "--launch-count", "3"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["kernels"][0]["analysis"]["launches"], 3);
  EXPECT_EQ(j["kernels"][0]["collection"], "questions sol,launch");
}

// Every kernel of a problem in one ncu session: each analysed from its own launches (its NVTX
// range), as a session per kernel would.
TEST_F(Profile, SeveralKernelsShareOneSessionAndEachKeepsItsOwnLaunches) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json one =
      kopt({"profile", example("softmax"), "--question", "sol,launch", "--launch-count", "2"}, rc);
  ASSERT_EQ(rc, 0) << one.dump(2);
  const std::size_t n = one["kernels"].size();
  ASSERT_GE(n, 2u);
  json apart = kopt({"profile", example("softmax"), "--question", "sol,launch", "--launch-count",
                     "2", "--session-per-kernel"},
                    rc);
  ASSERT_EQ(rc, 0) << apart.dump(2);
  for (std::size_t i = 0; i < n; ++i) {
    const json& k = one["kernels"][i];
    EXPECT_EQ(k["status"], "ok") << k.dump(2);
    EXPECT_EQ(k["ncu_session_kernels"], n);
    EXPECT_EQ(k["analysis"]["launches"], 2) << k["kernel"];  // its own two, not the session's
    EXPECT_EQ(apart["kernels"][i]["ncu_session_kernels"], 1);
    EXPECT_EQ(k["analysis"]["kernel"], apart["kernels"][i]["analysis"]["kernel"]);
    for (const char* m :
         {"launch__grid_size", "launch__block_size", "launch__registers_per_thread"})
      EXPECT_EQ(k["analysis"]["metrics"][m], apart["kernels"][i]["analysis"]["metrics"][m])
          << k["kernel"] << " " << m;
    fs::path dir = k["dir"].get<std::string>();
    for (const char* f : {"summary.md", "details.md", "analysis.json", "profile.csv"})
      EXPECT_TRUE(fs::exists(dir / f)) << f;
    EXPECT_TRUE(fs::exists(k["report_file"].get<std::string>()));
  }
}

TEST_F(Profile, AFaultingKernelIsAFailedCandidate) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_NCU();
  int rc = -1;
  json j = kopt({"profile", (test::source_dir() / "tests/fixtures/problems/faults").string(),
                 "--kernel", "out_of_bounds", "--kernel", "good_first"},
                rc);
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(j["kernels"].size(), 2u);
  std::map<std::string, std::string> status;
  for (const auto& k : j["kernels"]) status[k["kernel"]] = k["status"];
  EXPECT_EQ(status["out_of_bounds"], "run_failed") << j.dump(2);
  EXPECT_EQ(status["good_first"], "ok") << j.dump(2);
}

TEST_F(Profile, WithoutCounterPermissionItFallsBackAndSaysHow) {
  KOPT_SKIP_WITHOUT_GPU();
  // An ncu that answers as ncu does for a user without counter access.
  fs::path bin = m_dir.path() / "bin";
  fs::create_directories(bin);
  ASSERT_TRUE(write_text_atomic(
      bin / "ncu",
      "#!/bin/sh\n"
      "if [ \"$1\" = --version ]; then echo 'Version 2025.3.1.0 (build 0)'; exit 0; fi\n"
      "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
      "GPU Performance Counters on the target device 0.'\n"
      "exit 1\n"));
  fs::permissions(bin / "ncu", fs::perms::owner_all);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  int rc = -1;
  json j = kopt({"profile", example("vector_add"), "--kernel", "naive"}, rc);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(rc, 3);
  const json& k = j["kernels"][0];
  EXPECT_EQ(k["status"], "no_counters");
  EXPECT_NE(k["error"].get<std::string>().find("NVreg_RestrictProfilingToAdminUsers=0"),
            std::string::npos);
  EXPECT_EQ(k["analysis"]["bottleneck"]["class"], "unknown");
  EXPECT_GT(k["analysis"]["time_s"].get<double>(), 0);
  EXPECT_EQ(k["analysis"]["roofline"]["points"].size(), 1u);  // from the cost formulas only
}

}  // namespace
}  // namespace kopt
