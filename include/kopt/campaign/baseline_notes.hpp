#pragma once
// Why a PyTorch baseline's time should not be taken at face value, where kopt can tell:
// a spread far above the noise target, torch.compile recompiling while it was timed, graph
// breaks, Python's own time per call, throttling. Pure: from the series and its summary.
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/measure/statistics.hpp"

namespace kopt::campaign {

// A baseline whose sample-to-sample spread (relative noise) is above this is "noisy".
inline constexpr double k_noisy_baseline = 0.05;

// Flags such as "noisy: 19.0 % spread; torch.compile recompiled 2 times while it was timed".
// Empty for a clean series.
std::vector<std::string> torch_baseline_flags(const SampleSeries& series, const Summary& summary,
                                              std::size_t throttled_samples,
                                              double noisy_above = k_noisy_baseline);

}  // namespace kopt::campaign
