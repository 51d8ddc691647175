#include "kopt/measure/distribution_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "kopt/measure/statistics.hpp"

namespace kopt {
namespace {

constexpr double k_min_cluster_share = 0.2;
constexpr std::size_t k_min_cluster_size = 5;
constexpr double k_edge_share = 0.1;
constexpr std::size_t k_min_edge_size = 3;
constexpr double k_max_mode_ratio = 0.85;
constexpr double k_fast_below = 0.8;
constexpr double k_fast_min_share = 0.05;
constexpr std::size_t k_fast_min_count = 3;
constexpr double k_fast_fence_iqrs = 3.0;
// Of consecutive pairs, the share on opposite sides of their neighbours' median: 0.8 leaves room
// for the hiccups of a CPU device shared with the operating system (on PoCL a kernel that works on
// every other launch went unflagged at 0.9 in about one run in four, two or three stalls each
// costing two crossings); an honest series crosses about half the time. 16 of 19 by chance is
// about 1 in 500, and heavy-tailed noise makes the two halves' medians differ by 15 % easily
// (an honest series of 20 lognormal samples was flagged 1 time in 200): so the count must also
// be k_chance_deviations above chance, which asks more than 0.8 below about 45 pairs.
constexpr double k_min_alternation = 0.8;
constexpr double k_chance_deviations = 4.0;
// The samples around a pair whose median it is judged against (the pair among them).
constexpr std::size_t k_alternation_window = 10;
// The second test of alternation, for a host so loaded that the first fails (CI's PoCL: a
// skipper's 214 samples spread over 0.4-11 ms, 153 of 213 pairs across their neighbours'
// median, 0.72): the share of samples that are a peak or a trough between their two
// neighbours. Of an honest (independent) series about 2/3 are; 0.8 and 4 deviations above that
// are both asked, so that short series must alternate almost throughout. Equal neighbours
// make no peak: a timer's steps do not add any.
constexpr double k_min_turning_share = 0.8;

// The samples strictly above or strictly below both of their neighbours.
std::size_t turning_points(std::span<const double> x) {
  std::size_t count = 0;
  for (std::size_t i = 1; i + 1 < x.size(); ++i)
    count += (x[i] > x[i - 1] && x[i] > x[i + 1]) || (x[i] < x[i - 1] && x[i] < x[i + 1]);
  return count;
}

// Whether `count` of `trials` reaches both `share` of them and k_chance_deviations standard
// deviations (`deviation`) above what chance gives an honest series (`expected`).
bool beyond_chance(std::size_t count, std::size_t trials, double share, double expected,
                   double deviation) {
  const double n = static_cast<double>(trials);
  return static_cast<double>(count) >=
         std::max(share * n, expected + k_chance_deviations * deviation);
}

std::string time_text(double s) {
  if (s >= 1.0) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

// The timer's step, as the samples show it: the smallest non-zero difference between two
// neighbours, the gap at `skip` (x[skip - 1] .. x[skip]) aside.
double smallest_step(std::span<const double> sorted, std::size_t skip) {
  double step = std::numeric_limits<double>::infinity();
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (double d = sorted[i] - sorted[i - 1]; d > 0 && i != skip) step = std::min(step, d);
  return std::isfinite(step) ? step : 0.0;
}

std::vector<double> sorted_copy(std::span<const double> samples) {
  std::vector<double> s(samples.begin(), samples.end());
  std::sort(s.begin(), s.end());
  return s;
}

}  // namespace

std::optional<DistributionFlag> bimodal_flag(std::span<const double> samples) {
  const std::size_t n = samples.size();
  if (n < k_min_samples_for_flags) return std::nullopt;
  std::vector<double> x = sorted_copy(samples);
  const auto min_side =
      std::max(k_min_cluster_size,
               static_cast<std::size_t>(std::ceil(k_min_cluster_share * static_cast<double>(n))));
  const auto w = std::max(
      k_min_edge_size, static_cast<std::size_t>(std::ceil(k_edge_share * static_cast<double>(n))));
  if (2 * min_side > n) return std::nullopt;
  // The emptiest gap x[k - 1] .. x[k] with enough samples on each side: the widest relative to
  // the span of the w samples next to it on either side.
  std::size_t split = 0;
  double best = -1, gap = 0, span = 0;
  for (std::size_t k = min_side; k + min_side <= n; ++k) {
    double g = x[k] - x[k - 1];
    if (g <= 0) continue;
    double s = std::max(x[k - 1] - x[k - w], x[k + w - 1] - x[k]);
    double score = s > 0 ? g / s : std::numeric_limits<double>::infinity();
    if (score > best) {
      best = score;
      split = k;
      gap = g;
      span = s;
    }
  }
  if (split == 0 || gap < span || gap <= 2 * smallest_step(x, split)) return std::nullopt;
  std::span<const double> fast(x.data(), split), slow(x.data() + split, n - split);
  double fast_median = quantile_sorted(fast, 0.5), slow_median = quantile_sorted(slow, 0.5);
  if (fast_median > k_max_mode_ratio * slow_median) return std::nullopt;
  const double share = 100.0 * static_cast<double>(fast.size()) / static_cast<double>(n);
  return DistributionFlag{
      "bimodal",
      fmt::format(
          "two clusters: {:.0f} % of the samples near {} and {:.0f} % near {}, none between {} "
          "and {} (a gap wider than the span of the {} samples on either side of it)",
          share, time_text(fast_median), 100.0 - share, time_text(slow_median),
          time_text(x[split - 1]), time_text(x[split]), w)};
}

std::optional<DistributionFlag> alternating_flag(std::span<const double> samples) {
  const std::size_t n = samples.size();
  if (n < k_min_samples_for_flags) return std::nullopt;
  // Each pair against the median of the ten samples around it, not the series': a host whose
  // speed drifts (CI's PoCL: both levels of a skipper twice as slow for thirty samples at a
  // time) lifts a whole stretch above the series' median, while every other sample stays the
  // fast one of its neighbours.
  const std::size_t w = std::min(n, k_alternation_window);
  std::size_t pairs = 0, crossings = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const std::size_t lo = std::min(i > w / 2 ? i - w / 2 : 0, n - w);  // the pair in the middle
    const double median = quantile_sorted(sorted_copy(samples.subspan(lo, w)), 0.5);
    if (samples[i - 1] == median || samples[i] == median) continue;
    ++pairs;
    crossings += (samples[i - 1] < median) != (samples[i] < median);
  }
  if (pairs < k_min_samples_for_flags - 1) return std::nullopt;
  // An honest pair crosses half the time (a binomial's deviation); of an honest series 2/3 of the
  // inner samples are peaks or troughs, with a deviation of sqrt((16 n - 29) / 90) (Kendall and
  // Stuart).
  const double p = static_cast<double>(pairs), m = static_cast<double>(n);
  const bool across_median =
      beyond_chance(crossings, pairs, k_min_alternation, p / 2, std::sqrt(p) / 2);
  const std::size_t turning = turning_points(samples);
  const bool peaks = beyond_chance(turning, n - 2, k_min_turning_share, 2 * (m - 2) / 3,
                                   std::sqrt((16 * m - 29) / 90));
  if (!across_median && !peaks) return std::nullopt;
  std::vector<double> even, odd;
  for (std::size_t i = 0; i < n; ++i) (i % 2 ? odd : even).push_back(samples[i]);
  std::sort(even.begin(), even.end());
  std::sort(odd.begin(), odd.end());
  double a = quantile_sorted(even, 0.5), b = quantile_sorted(odd, 0.5);
  double fast = std::min(a, b), slow = std::max(a, b);
  if (fast > k_max_mode_ratio * slow) return std::nullopt;
  const std::string pattern =
      across_median ? fmt::format(
                          "{} of {} consecutive samples on opposite sides of their neighbours' "
                          "median",
                          crossings, pairs)
                    : fmt::format(
                          "{} of {} samples a peak or a trough between their two neighbours (of an "
                          "honest series about 2/3 are)",
                          turning, n - 2);
  return DistributionFlag{"alternating",
                          fmt::format("{}; every other sample near {}, the rest near {} (work "
                                      "done on every other launch?)",
                                      pattern, time_text(fast), time_text(slow))};
}

std::optional<DistributionFlag> fast_tail_flag(std::span<const double> samples) {
  const std::size_t n = samples.size();
  if (n < k_min_samples_for_flags) return std::nullopt;
  std::vector<double> x = sorted_copy(samples);
  // Below 0.8 x the median; beyond Tukey's outer fence (Q1 - 3 IQR), so that a noisy device
  // (a CPU shared with other work) whose typical sample is slowed does not trip it; and more
  // than two timer steps below the median: a kernel a few steps long times one step faster
  // without being far faster.
  const double median = quantile_sorted(x, 0.5), q1 = quantile_sorted(x, 0.25);
  const double fence = q1 - k_fast_fence_iqrs * (quantile_sorted(x, 0.75) - q1);
  const double limit = std::min({k_fast_below * median, fence, median - 2 * smallest_step(x, 0)});
  const auto fast =
      static_cast<std::size_t>(std::lower_bound(x.begin(), x.end(), limit) - x.begin());
  const auto need =
      std::max(k_fast_min_count,
               static_cast<std::size_t>(std::ceil(k_fast_min_share * static_cast<double>(n))));
  if (median <= 0 || fast < need) return std::nullopt;
  return DistributionFlag{
      "fast_tail",
      fmt::format("{} of {} samples ({:.0f} %) are below {}: under {} x the median {} and beyond "
                  "Q1 - 3 IQR ({}); fastest {}",
                  fast, n, 100.0 * static_cast<double>(fast) / static_cast<double>(n),
                  time_text(limit), k_fast_below, time_text(median), time_text(fence),
                  time_text(x.front()))};
}

std::optional<DistributionFlag> secret_slow_flag(std::span<const double> samples,
                                                 std::span<const std::int64_t> secret) {
  std::set<std::int64_t> left_out;
  std::vector<double> on_secret, others;
  for (std::int64_t i : secret)
    if (i >= 0 && static_cast<std::size_t>(i) < samples.size()) {
      on_secret.push_back(samples[static_cast<std::size_t>(i)]);
      left_out.insert(i);
      left_out.insert(i + 1);
    }
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (!left_out.count(static_cast<std::int64_t>(i))) others.push_back(samples[i]);
  // Against the 90th percentile of ten or more others, not their median: a busy machine slows
  // a share of the samples, and both secret ones among them was an honest kernel flagged (found
  // running the exploit suite twice at once on PoCL, about one run in twelve). A cache's
  // secret samples do the work its others skip, far past that. A short series (a time cap on a
  // busy machine can stop one at its minimum of 10 samples, 6 of them "others", found in CI on
  // PoCL: the content-keyed cache went unflagged) needs every secret sample past the slowest
  // of 4 or more.
  if (on_secret.size() < 2 || others.size() < 4) return std::nullopt;
  std::sort(others.begin(), others.end());
  double median = others[others.size() / 2];
  double fastest = *std::min_element(on_secret.begin(), on_secret.end());
  double bar = others.size() >= 10 ? others[others.size() * 9 / 10] : others.back();
  if (median <= 0 || fastest <= k_secret_slower * bar) return std::nullopt;
  std::string times;
  for (double t : on_secret) times += (times.empty() ? "" : ", ") + time_text(t);
  return DistributionFlag{
      "secret_slow",
      fmt::format("the {} samples on inputs nobody had seen (a secret seed's, and a mix) took {} "
                  "against a median of {} for the others ({:.1f}x or more): faster on inputs it "
                  "has seen before, as a cache across calls is",
                  on_secret.size(), times, time_text(median), fastest / median)};
}

std::vector<DistributionFlag> distribution_flags(std::span<const double> samples,
                                                 std::span<const std::int64_t> secret) {
  std::vector<DistributionFlag> out;
  if (auto f = bimodal_flag(samples)) out.push_back(std::move(*f));
  if (auto f = alternating_flag(samples)) out.push_back(std::move(*f));
  if (auto f = fast_tail_flag(samples)) out.push_back(std::move(*f));
  if (auto f = secret_slow_flag(samples, secret)) out.push_back(std::move(*f));
  return out;
}

std::string flag_text(const DistributionFlag& f) {
  return f.name + " (" + f.detail + ")";
}

}  // namespace kopt
