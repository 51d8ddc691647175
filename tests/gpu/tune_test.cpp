// Device test of `kopt tune` (label "gpu"): a real search over the softmax space.
#include <gtest/gtest.h>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"

namespace kopt {
namespace {

TEST(Tune, ExhaustiveSearchOfTheSoftmaxSpace) {
  KOPT_SKIP_WITHOUT_GPU();
  TempDir cache("kopt-tune-test");
  ::setenv("KOPT_CACHE_DIR", cache.path().c_str(), 1);
  int rc = -1;
  auto j = test::kopt_json({"tune", (test::source_dir() / "examples/softmax").string(), "--kernel",
                            "tuned", "--strategy", "exhaustive", "--budget", "30", "--max-time",
                            "0.3", "--out", (cache.path() / "champion.json").string()},
                           rc);
  ::unsetenv("KOPT_CACHE_DIR");
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["space_size"], 24);
  EXPECT_EQ(j["search"]["stop_reason"], "space exhausted");
  EXPECT_EQ(j["search"]["evaluations"], 24);  // every point of 4 x 3 x 2, each once
  ASSERT_TRUE(j["search"]["best"].is_object());
  EXPECT_GT(j["search"]["best"]["cost"].get<double>(), 0);  // a screening median: ranks only
  // The champion is confirmed: measured in full, and among the confirmed candidates.
  ASSERT_TRUE(j["champion"].is_object()) << j.dump(2);
  EXPECT_TRUE(j["champion"]["ok"].get<bool>());
  EXPECT_GT(j["champion"]["summary"]["median"].get<double>(), 0);
  EXPECT_GE(j["confirmed"].size(), 1u);
  EXPECT_GT(j["configs_per_min"].get<double>(), 0);
}

}  // namespace
}  // namespace kopt
