#include "kopt/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kopt {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = quantile_sorted(sorted, 0.5);
  s.p10 = quantile_sorted(sorted, 0.1);
  s.p90 = quantile_sorted(sorted, 0.9);
  s.q1 = quantile_sorted(sorted, 0.25);
  s.q3 = quantile_sorted(sorted, 0.75);
  s.iqr = s.q3 - s.q1;
  s.total = std::accumulate(sorted.begin(), sorted.end(), 0.0);
  s.mean = s.total / static_cast<double>(s.n);
  double ss = 0;
  for (double v : sorted) ss += (v - s.mean) * (v - s.mean);
  s.stdev = s.n > 1 ? std::sqrt(ss / static_cast<double>(s.n - 1)) : 0.0;
  s.rel_noise = s.mean > 0 ? s.stdev / s.mean : 0.0;
  // Ranks n/2 -+ 1.96 sqrt(n)/2 (1-based, normal approximation of the binomial), clamped.
  const double n = static_cast<double>(s.n), half = 1.96 * std::sqrt(n) / 2;
  const auto lo = static_cast<std::size_t>(std::max(1.0, std::floor(n / 2 - half)));
  const auto hi = static_cast<std::size_t>(std::min(n, std::ceil(1 + n / 2 + half)));
  s.median_low = sorted[lo - 1];
  s.median_high = sorted[hi - 1];
  return s;
}

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::not_yet:
      return "not_yet";
    case StopReason::noise_reached:
      return "noise_reached";
    case StopReason::noise_plateau:
      return "noise_plateau";
    case StopReason::time_cap:
      return "time_cap";
    case StopReason::sample_cap:
      return "sample_cap";
    case StopReason::verdict_reached:
      return "verdict_reached";
  }
  return "?";
}

double min_samples_budget_s(const StoppingRule& rule) {
  return std::max(k_min_samples_budget_s, rule.max_time_s);
}

StopReason StoppingTracker::add(double sample_s, double wall_elapsed_s) {
  ++m_n;
  m_sum += sample_s;
  m_sum_sq += sample_s * sample_s;
  double mean = m_sum / static_cast<double>(m_n);
  double var =
      m_n > 1 ? std::max(0.0, (m_sum_sq - m_sum * mean) / static_cast<double>(m_n - 1)) : 0.0;
  double noise = mean > 0 ? std::sqrt(var) / mean : 0.0;
  m_noise.push_back(noise);
  if (wall_elapsed_s >= m_rule.max_time_s && m_n >= m_rule.min_samples) return StopReason::time_cap;
  if (m_n >= m_rule.max_samples) return StopReason::sample_cap;
  // (1 - 1e-9): ten samples of 0.1 ms make 1 ms, not 0.99999... ms of summed rounding.
  if (m_n < m_rule.min_samples || m_sum < m_rule.min_time_s * (1 - 1e-9))
    return StopReason::not_yet;
  if (noise <= m_rule.max_noise) return StopReason::noise_reached;
  std::size_t w = m_rule.plateau_window;
  if (w > 0 && m_noise.size() > 2 * w) {
    double before = m_noise[m_noise.size() - 1 - w];
    if (noise > 0 && std::fabs(noise - before) <= m_rule.plateau_tolerance * noise)
      return StopReason::noise_plateau;
  }
  return StopReason::not_yet;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::faster:
      return "faster";
    case Verdict::slower:
      return "slower";
    case Verdict::same:
      return "same";
    case Verdict::ambiguous:
      return "ambiguous";
  }
  return "?";
}

namespace {

// P(X <= k) for X ~ Binomial(n, 1/2), computed in log space.
double binomial_half_cdf(std::size_t n, std::size_t k) {
  double total = 0;
  double log_half_n = static_cast<double>(n) * std::log(0.5);
  for (std::size_t i = 0; i <= k && i <= n; ++i)
    total += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                      log_half_n);
  return std::min(1.0, total);
}

}  // namespace

Comparison compare_paired(std::span<const double> a, std::span<const double> b, double threshold,
                          double confidence) {
  Comparison c;
  c.threshold = threshold;
  std::size_t n = std::min(a.size(), b.size());
  c.pairs = n;
  if (n == 0) return c;
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = a[i] / b[i];
  std::sort(r.begin(), r.end());
  c.ratio = quantile_sorted(r, 0.5);
  // The interval [r_(k+1), r_(n-k)] covers the median with probability 1 - 2 P(X <= k):
  // take the largest k that keeps the coverage at or above `confidence`.
  double alpha = 1.0 - confidence;
  std::size_t k = 0;
  bool any = false;
  while (k < n / 2 && 2 * binomial_half_cdf(n, k) <= alpha) {
    any = true;
    ++k;
  }
  if (any) --k;
  // Without any k the widest interval [r_(1), r_(n)] still falls short of `confidence`.
  c.confidence =
      any ? 1.0 - 2 * binomial_half_cdf(n, k) : 1.0 - 2 * std::pow(0.5, static_cast<double>(n));
  c.ci_low = r[k];
  c.ci_high = r[n - 1 - k];
  if (c.ci_high < 1.0 - threshold)
    c.verdict = Verdict::faster;
  else if (c.ci_low > 1.0 + threshold)
    c.verdict = Verdict::slower;
  else if (c.ci_low >= 1.0 - threshold && c.ci_high <= 1.0 + threshold)
    c.verdict = Verdict::same;
  else
    c.verdict = Verdict::ambiguous;
  if (!any) c.verdict = Verdict::ambiguous;  // too few pairs for the confidence asked for
  return c;
}

nlohmann::json to_json(const Summary& s) {
  return {{"n", s.n},
          {"median", s.median},
          {"mean", s.mean},
          {"min", s.min},
          {"max", s.max},
          {"p10", s.p10},
          {"p90", s.p90},
          {"q1", s.q1},
          {"q3", s.q3},
          {"iqr", s.iqr},
          {"stdev", s.stdev},
          {"rel_noise", s.rel_noise},
          {"total", s.total},
          {"median_low", s.median_low},
          {"median_high", s.median_high}};
}

nlohmann::json to_json(const Comparison& c) {
  return {{"pairs", c.pairs},
          {"ratio", c.ratio},
          {"ci_low", c.ci_low},
          {"ci_high", c.ci_high},
          {"confidence", c.confidence},
          {"threshold", c.threshold},
          {"verdict", verdict_name(c.verdict)}};
}

}  // namespace kopt
