#include "kopt/measure/statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kopt {
namespace {

TEST(Summary, KnownValues) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  Summary s = summarize(v);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.iqr, 2);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(2.5));
  EXPECT_DOUBLE_EQ(s.rel_noise, std::sqrt(2.5) / 3);
  EXPECT_DOUBLE_EQ(s.total, 15);
  EXPECT_EQ(summarize(std::vector<double>{}).n, 0u);
  EXPECT_DOUBLE_EQ(summarize(std::vector<double>{7}).median, 7);
}

TEST(Quantile, InterpolatesBetweenRanks) {
  std::vector<double> v = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 25);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 10);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 40);
}

StoppingRule rule() {
  StoppingRule r;
  r.min_samples = 10;
  r.min_time_s = 1e-3;
  r.max_noise = 0.005;
  r.max_time_s = 5.0;
  r.plateau_window = 20;
  r.plateau_tolerance = 0.05;
  return r;
}

TEST(Stopping, QuietStreamStopsOnNoiseOnceMinimaAreMet) {
  StoppingRule r0 = rule();
  r0.min_time_s = 0.9e-3;  // ten samples of ~100 us pass it
  StoppingTracker t(r0);
  std::mt19937 rng(1);
  std::normal_distribution<double> d(1e-4, 1e-7);  // 0.1 % noise
  StopReason r = StopReason::not_yet;
  int n = 0;
  while (r == StopReason::not_yet) r = t.add(d(rng), 0.01 * ++n);
  EXPECT_EQ(r, StopReason::noise_reached);
  EXPECT_EQ(n, 10);  // both minima met at the tenth sample
}

TEST(Stopping, MinimumGpuTimeHoldsBackAQuietStream) {
  StoppingRule r = rule();
  r.min_time_s = 0.01;
  StoppingTracker t(r);
  int n = 0;
  StopReason s = StopReason::not_yet;
  while (s == StopReason::not_yet) s = t.add(1e-4, 0.001 * ++n);
  EXPECT_EQ(s, StopReason::noise_reached);
  EXPECT_EQ(n, 100);
}

TEST(Stopping, IntrinsicallyNoisyStreamStopsWhenTheNoiseNoLongerImproves) {
  StoppingTracker t(rule());
  std::mt19937 rng(2);
  std::normal_distribution<double> d(1e-4, 3e-6);  // 3 % noise: the target is never reached
  StopReason r = StopReason::not_yet;
  int n = 0;
  while (r == StopReason::not_yet && n < 100000) r = t.add(d(rng), 1e-4 * ++n);
  EXPECT_EQ(r, StopReason::noise_plateau);
  EXPECT_GT(n, 40);
  EXPECT_NEAR(t.current_noise(), 0.03, 0.01);
}

TEST(Stopping, TimeCapWins) {
  StoppingRule r = rule();
  r.plateau_window = 0;  // no plateau rule
  StoppingTracker t(r);
  std::mt19937 rng(3);
  std::normal_distribution<double> d(1e-3, 1e-4);
  StopReason s = StopReason::not_yet;
  double wall = 0;
  while (s == StopReason::not_yet) s = t.add(d(rng), wall += 0.1);
  EXPECT_EQ(s, StopReason::time_cap);
  EXPECT_GE(wall, 5.0);
}

TEST(Compare, ClearDifferencesAndTies) {
  std::mt19937 rng(4);
  std::normal_distribution<double> noise(0.0, 0.002);
  std::vector<double> a, b, same_a, same_b;
  for (int i = 0; i < 60; ++i) {
    double base = 1e-4 * (1 + noise(rng));
    a.push_back(base * 0.8);  // A 20 % faster
    b.push_back(base);
    same_a.push_back(1e-4 * (1 + noise(rng)));
    same_b.push_back(1e-4 * (1 + noise(rng)));
  }
  Comparison faster = compare_paired(a, b, 0.01);
  EXPECT_EQ(faster.verdict, Verdict::faster);
  EXPECT_NEAR(faster.ratio, 0.8, 0.005);
  EXPECT_LT(faster.ci_high, 0.99);
  EXPECT_EQ(compare_paired(b, a, 0.01).verdict, Verdict::slower);
  Comparison same = compare_paired(same_a, same_b, 0.01);
  EXPECT_EQ(same.verdict, Verdict::same);
  EXPECT_GE(same.confidence, 0.95);
  EXPECT_LE(same.ci_low, 1.0);
  EXPECT_GE(same.ci_high, 1.0);
}

TEST(Compare, AnIntervalAcrossTheThresholdIsAmbiguous) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(1.0 + 0.03 * ((i % 7) - 3));  // ratios spread over 0.91 .. 1.09
    b.push_back(1.0);
  }
  EXPECT_EQ(compare_paired(a, b, 0.01).verdict, Verdict::ambiguous);
}

TEST(Compare, TooFewPairsForTheConfidenceIsAmbiguous) {
  std::vector<double> a = {0.5, 0.5, 0.5, 0.5, 0.5}, b = {1, 1, 1, 1, 1};
  Comparison c = compare_paired(a, b, 0.01);  // 5 pairs cannot give 95 %: 1 - 2/32 = 93.75 %
  EXPECT_EQ(c.verdict, Verdict::ambiguous);
  EXPECT_NEAR(c.confidence, 0.9375, 1e-12);
  std::vector<double> a6(6, 0.5), b6(6, 1.0);
  Comparison c6 = compare_paired(a6, b6, 0.01);  // 1 - 2/64 = 96.9 %
  EXPECT_EQ(c6.verdict, Verdict::faster);
  EXPECT_NEAR(c6.confidence, 1 - 2.0 / 64, 1e-12);
}

TEST(Compare, IntervalUsesOrderStatistics) {
  // n = 20: the 95 % interval of the median is [r_(6), r_(15)] (coverage 95.9 %).
  std::vector<double> a, b(20, 1.0);
  for (int i = 1; i <= 20; ++i) a.push_back(0.5 + 0.01 * i);
  Comparison c = compare_paired(a, b, 0.01);
  EXPECT_DOUBLE_EQ(c.ci_low, 0.56);
  EXPECT_DOUBLE_EQ(c.ci_high, 0.65);
  EXPECT_NEAR(c.confidence, 0.9586, 1e-4);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(Summary, MedianIntervalIsTheOrderStatisticsAroundTheMedian) {
  std::vector<double> x;
  for (int i = 15; i >= 1; --i) x.push_back(i);  // 1..15, unsorted
  Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 8);
  EXPECT_DOUBLE_EQ(s.median_low, 3);  // ranks 3 and 13 of 15 (95 %)
  EXPECT_DOUBLE_EQ(s.median_high, 13);
  Summary one = summarize(std::vector<double>{4.0});
  EXPECT_DOUBLE_EQ(one.median_low, 4);
  EXPECT_DOUBLE_EQ(one.median_high, 4);
}

}  // namespace
}  // namespace kopt
