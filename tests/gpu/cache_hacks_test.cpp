// A cache across calls is caught on the GPU (label "gpu"): tests/fixtures/problems/cache_hacks.
// `by_address` returns what it kept for seed 1 whatever its inputs hold, and passes every
// poison check; the secret-seed samples of the timing job make it inconsistent. `by_content`
// keys what it kept on its inputs, so every answer is right, and only the secret-seed samples
// (new inputs) cost it the real work: flagged secret_slow. `honest` is neither.
#include <gtest/gtest.h>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"
#include "kopt_json.hpp"

namespace kopt {
namespace {
using nlohmann::json;

class CacheHacksOnTheGpu : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }
  json bench(const char* kernel, int& rc, const char* mode = "cold") {
    return test::kopt_json({"--backend", "cuda", "bench",
                            (test::source_dir() / "tests/fixtures/problems/cache_hacks").string(),
                            "--kernel", kernel, "--mode", mode, "--max-time", "3"},
                           rc);
  }
  static bool flagged(const json& v, const char* name) {
    for (const auto& f : v["flags"])
      if (f["name"] == name) return true;
    return false;
  }
  TempDir m_dir{"kopt-cache-hacks-gpu"};
};

TEST_F(CacheHacksOnTheGpu, AnswersKeptFromAnEarlierCallAreInconsistent) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  json j = bench("by_address", rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  const json& v = j["variants"][0];
  EXPECT_EQ(v["status"], "inconsistent") << v.dump(2);
  std::string error = v["error"];
  EXPECT_NE(error.find("ran on a secret seed's inputs"), std::string::npos) << error;
  EXPECT_NE(error.find("returned answers it did not compute"), std::string::npos) << error;
}

// Cold mode. (Hot, a kernel this short is timed in CUDA graph batches: a secret batch is one
// launch on new inputs and the rest on kept answers, too little to tell; docs/honesty.md.)
TEST_F(CacheHacksOnTheGpu, ACacheKeyedOnTheInputsIsFlaggedSlowOnSecretInputs) {
  KOPT_SKIP_WITHOUT_GPU();
  for (const char* mode : {"cold"}) {
    int rc = -1;
    json j = bench("by_content", rc, mode);
    const json& v = j["variants"][0];
    EXPECT_EQ(v["status"], "ok") << mode << v.dump(2);  // every answer it gives is right
    EXPECT_EQ(v["series"]["verification"]["secret_samples"].size(), 2u) << mode << v.dump(2);
    EXPECT_TRUE(flagged(v, "secret_slow")) << mode << v["flags"].dump(2);
  }
}

TEST_F(CacheHacksOnTheGpu, TheHonestKernelRunsSecretSamplesUnflagged) {
  KOPT_SKIP_WITHOUT_GPU();
  for (const char* mode : {"cold", "hot"}) {
    int rc = -1;
    json j = bench("honest", rc, mode);
    ASSERT_EQ(rc, 0) << j.dump(2);
    const json& v = j["variants"][0];
    EXPECT_EQ(v["status"], "ok") << v.dump(2);
    EXPECT_EQ(v["series"]["verification"]["secret_samples"].size(), 2u) << mode << v.dump(2);
    EXPECT_EQ(v["flags"], json::array()) << mode << v["flags"].dump(2);
  }
}

}  // namespace
}  // namespace kopt
