// Verdicts on sample sets recorded on the device (tests/fixtures/timing/README.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kopt/core/fs.hpp"
#include "kopt/measure/statistics.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

nlohmann::json fixture(const char* name) {
  auto text = read_text_file(test::source_dir() / "tests/fixtures/timing" / name);
  EXPECT_TRUE(text);
  return nlohmann::json::parse(text ? *text : "{}");
}

std::vector<double> samples(const nlohmann::json& j, const char* side) {
  return j[side]["samples_s"].get<std::vector<double>>();
}

TEST(RecordedVerdicts, TunedSoftmaxIsFasterThanNaive) {
  auto j = fixture("vs-faster.json");
  Comparison c = compare_paired(samples(j, "a"), samples(j, "b"), 0.01);
  EXPECT_EQ(c.verdict, Verdict::faster);
  EXPECT_NEAR(c.ratio, j["recorded_comparison"]["ratio"].get<double>(), 1e-12);
  EXPECT_LT(c.ci_high, 0.03);
  Summary a = summarize(samples(j, "a"));
  EXPECT_LT(a.rel_noise, 0.05);
}

TEST(RecordedVerdicts, OneKernelLoadedTwiceIsTheSameAtTwoPercentButNotAtATenthOfOne) {
  auto j = fixture("vs-same.json");
  auto a = samples(j, "a"), b = samples(j, "b");
  Comparison at2 = compare_paired(a, b, 0.02);
  EXPECT_EQ(at2.verdict, Verdict::same);
  EXPECT_NEAR(at2.ratio, j["recorded_comparison"]["ratio"].get<double>(), 1e-12);
  // The two copies differ by a resolvable 0.43 %: a threshold below that calls it.
  EXPECT_EQ(compare_paired(a, b, 0.001).verdict, Verdict::faster);
  EXPECT_EQ(compare_paired(a, b, 0.01).verdict, Verdict::same);
  // Fewer pairs give a wider interval around the same ratio.
  std::vector<double> a30(a.begin(), a.begin() + 30), b30(b.begin(), b.begin() + 30);
  Comparison few = compare_paired(a30, b30, 0.02);
  EXPECT_GT(few.ci_high - few.ci_low, at2.ci_high - at2.ci_low);
}

}  // namespace
}  // namespace kopt
