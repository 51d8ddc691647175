#pragma once
// Robust summaries of timing samples and the rule that decides when to stop sampling.
// Pure functions: no clocks, no devices (docs/architecture.md §2, measure/).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kopt {

struct Summary {
  std::size_t n = 0;
  double median = 0, mean = 0, min = 0, max = 0;
  double p10 = 0, p90 = 0, q1 = 0, q3 = 0, iqr = 0;
  double stdev = 0;      // sample standard deviation (n - 1)
  double rel_noise = 0;  // stdev / mean: the spread of one sample, as nvbench reports "noise"
  double total = 0;      // sum of the samples
  // A distribution-free 95 % confidence interval of the median: the order statistics the
  // binomial(n, 1/2) puts around it (the whole range below 6 samples).
  double median_low = 0, median_high = 0;
};

// Linear interpolation between closest ranks (the "type 7" quantile of R and NumPy).
double quantile_sorted(std::span<const double> sorted, double q);
Summary summarize(std::span<const double> samples);

// When to stop: at least `min_samples` and `min_time` of measured time, then stop once the
// relative noise is at most `max_noise`, or once it has stopped improving (it moved by less
// than `plateau_tolerance` of itself over the last `plateau_window` samples), or at
// `max_time` of wall time whatever the noise. The time cap bounds the timed launches (the
// timers leave out warm-up and verification) and never cuts a series below `min_samples`:
// no statistic, verification or decision rests on fewer.
struct StoppingRule {
  std::size_t min_samples = 10;
  double min_time_s = 0.5;   // total measured (GPU) time
  double max_noise = 0.005;  // 0.5 %
  double max_time_s = 15.0;  // wall time cap of the timed launches
  std::size_t plateau_window = 20;
  double plateau_tolerance = 0.05;
  std::size_t max_samples = 100000;
};

// What the minimum sample count may take past the time cap, per variant: a kernel whose
// `min_samples` launches take longer than this (or than the cap, where that is longer) is a
// timeout, not a series of fewer samples. The worker's watchdog allows it for every variant.
inline constexpr double k_min_samples_budget_s = 5.0;
double min_samples_budget_s(const StoppingRule& rule);

enum class StopReason {
  not_yet,
  noise_reached,
  noise_plateau,
  time_cap,
  sample_cap,
  verdict_reached
};
std::string_view stop_reason_name(StopReason r);

// Follows a growing sample stream and says when to stop. Feed it every sample (seconds).
class StoppingTracker {
 public:
  explicit StoppingTracker(StoppingRule rule) : m_rule(rule) {}
  StopReason add(double sample_s, double wall_elapsed_s);
  const std::vector<double>& noise_history() const { return m_noise; }
  double current_noise() const { return m_noise.empty() ? 0.0 : m_noise.back(); }

 private:
  StoppingRule m_rule;
  std::size_t m_n = 0;
  double m_sum = 0, m_sum_sq = 0;
  std::vector<double> m_noise;
};

// Ratio A / B of paired, interleaved samples with a distribution-free confidence interval
// for the median ratio (order statistics of the binomial(n, 1/2)), and a verdict at a
// threshold: A faster when the whole interval is below 1 - threshold, slower when above
// 1 + threshold, same when inside [1 - threshold, 1 + threshold], ambiguous otherwise.
enum class Verdict { faster, slower, same, ambiguous };
std::string_view verdict_name(Verdict v);

struct Comparison {
  std::size_t pairs = 0;
  double ratio = 1.0;  // median of a_i / b_i
  double ci_low = 0, ci_high = 0;
  double confidence = 0.95;  // achieved coverage (>= the one asked for, when n allows)
  double threshold = 0.01;
  Verdict verdict = Verdict::ambiguous;
};
Comparison compare_paired(std::span<const double> a, std::span<const double> b,
                          double threshold = 0.01, double confidence = 0.95);

nlohmann::json to_json(const Summary& s);
nlohmann::json to_json(const Comparison& c);

}  // namespace kopt
