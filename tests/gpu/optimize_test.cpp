// Device tests of the loop (label "gpu"): kopt optimize, and one agent-driven iteration.
#include <gtest/gtest.h>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"

namespace kopt {
namespace {

class Loop : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1);
    ::setenv("KOPT_EXPERIENCE_DB", (m_dir.path() / "experience.db").c_str(),
             1);  // never the user's
  }
  void TearDown() override {
    ::unsetenv("KOPT_CACHE_DIR");
    ::unsetenv("KOPT_EXPERIENCE_DB");
  }
  std::string example(const char* name) {
    return (test::source_dir() / "examples" / name).string();
  }
  TempDir m_dir{"kopt-loop-test"};
};

TEST_F(Loop, OptimizeVectorAddFromTheNaiveKernel) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  std::string run = (m_dir.path() / "run").string();
  auto j = test::kopt_json(
      {"optimize", example("vector_add"), "--iterations", "2", "--max-time", "0.3", "--run", run},
      rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_GE(j["versions"].size(), 1u);
  EXPECT_EQ(j["versions"][0]["kernel"], "naive");
  EXPECT_EQ(j["status"], "finished");
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(run) / ".git"));
  // Resuming a finished run with more iterations goes on from where it stopped.
  auto again = test::kopt_json({"optimize", example("vector_add"), "--iterations", "3",
                                "--max-time", "0.3", "--run", run, "--resume"},
                               rc);
  ASSERT_EQ(rc, 0) << again.dump(2);
  EXPECT_GE(again["versions"].size(), j["versions"].size());
}

TEST_F(Loop, OneAgentDrivenIteration) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  std::string run = (m_dir.path() / "agent").string();
  auto opened = test::kopt_json({"iter", "open", run, "--problem", example("softmax")}, rc);
  ASSERT_EQ(rc, 0) << opened.dump(2);
  ASSERT_TRUE(opened["open"].is_object());
  std::string kernel = (test::source_dir() / "examples/softmax/kernel.cu").string();
  test::kopt_json({"iter", "branch", run, "--file", kernel, "--set", "VEC=4", "--set", "USE_SHFL=1",
                   "--method", "vectorized_global_loads"},
                  rc);
  ASSERT_EQ(rc, 0);
  test::kopt_json({"iter", "branch", run, "--file", kernel, "--set", "VEC=1", "--set", "USE_SHFL=1",
                   "--ablates", "vectorized_global_loads"},
                  rc);
  ASSERT_EQ(rc, 0);
  auto closed = test::kopt_json({"iter", "close", run, "--max-time", "0.3"}, rc);
  ASSERT_EQ(rc, 0) << closed.dump(2);
  const auto& v1 = closed["versions"][1];
  EXPECT_EQ(v1["outcome"], "accepted");  // 1.4 ms naive against ~21 us
  EXPECT_EQ(v1["method_outcomes"]["vectorized_global_loads"], "effective");
  auto done = test::kopt_json({"iter", "finalize", run}, rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(done["status"], "finished");
}

}  // namespace
}  // namespace kopt
