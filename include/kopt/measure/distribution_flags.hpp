#pragma once
// Shapes of a timing series that an honest kernel does not produce: two well-separated
// clusters (bimodal), or a group of samples far faster than the median (fast tail). A kernel
// that skips its work on some launches (a launch counter in device memory) times as both.
// Pure functions over the samples (seconds); the rules and their thresholds are documented
// in docs/problem-spec.md, beside the output poison.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kopt {

struct DistributionFlag {
  std::string name;    // "bimodal" | "alternating" | "fast_tail" | "secret_slow"
  std::string detail;  // the numbers that tripped the rule
  bool operator==(const DistributionFlag&) const = default;
};

// Fewer samples than this are never flagged: too few to tell a shape from chance.
inline constexpr std::size_t k_min_samples_for_flags = 20;

// bimodal: a gap in the sorted samples, with at least 20 % of them (and 5) on each side, that
// is wider than the span of the 10 % of samples (and 3) next to it on either side, and more
// than two timer steps (the smallest non-zero difference between neighbours elsewhere); and
// the fast cluster's median at most 0.85 x the slow one's. The span test is local: a cluster
// that is itself wide (a CPU shared with other work) does not hide an empty stretch between
// two clusters, while a smooth distribution has no gap anywhere near that wide (its widest
// gap between neighbours is a few times their mean spacing, the span of 10 % of the samples
// tens of times). Steady noise, slow outliers and the timer's quantization do not trip it; a
// kernel that does its work on only some of its launches does.
std::optional<DistributionFlag> bimodal_flag(std::span<const double> samples);

// alternating: at least 90 % of consecutive samples on opposite sides of the median, and the
// median of the samples at even positions at most 0.85 x the median of those at odd positions
// (or the other way round). Independent noise crosses the median at about half the steps; a
// kernel that does its work on every other launch crosses it at nearly every step, however
// noisy the machine (its two levels blur into one another on a loaded CPU, its order does not).
std::optional<DistributionFlag> alternating_flag(std::span<const double> samples);

// fast_tail: at least 5 % of the samples (and at least 3) below 0.8 x the median, below
// Tukey's outer fence Q1 - 3 IQR, and more than two timer steps below the median. Timing
// noise makes samples slower, almost never 20 % faster than the typical one and far outside
// the spread of the others; a kernel that skips its work on a few launches does that. (A
// 50/50 skip has no tail beyond the fence: it is bimodal.)
std::optional<DistributionFlag> fast_tail_flag(std::span<const double> samples);

// secret_slow: the samples that ran on inputs nobody had seen (output_verifier.hpp: the secret
// seed's and the mix; at least two) are all slower than 1.5 x the 90th percentile of the
// others (at least 10, else the slowest of 4 or more; the sample after each secret one is left
// out, as it runs on inputs changed back).
// An honest kernel does the same work on any inputs of the same shape; one that keeps results
// keyed by its inputs' content (a cache across calls) misses on inputs it has never seen.
inline constexpr double k_secret_slower = 1.5;
std::optional<DistributionFlag> secret_slow_flag(std::span<const double> samples,
                                                 std::span<const std::int64_t> secret);

// The rules, in that order (secret_slow with the series' secret samples).
std::vector<DistributionFlag> distribution_flags(std::span<const double> samples,
                                                 std::span<const std::int64_t> secret = {});

// "bimodal (two clusters: ...)": how the console and the run records show a flag.
std::string flag_text(const DistributionFlag& f);

}  // namespace kopt
