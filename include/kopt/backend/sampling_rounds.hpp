#pragma once
// The sampling schedule every backend's timer shares: rounds of A B, then B A, ... so that
// drifts in clocks or temperature hit both variants alike; each variant leaves the rotation
// when its stopping rule says so, and a paired comparison stops as soon as its verdict is
// decided. The backend only supplies "take one sample of variant i".
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"

namespace kopt {

struct SampledVariant {
  SampleSeries series;
  StoppingTracker tracker;
  bool done = false;
  explicit SampledVariant(const StoppingRule& rule) : tracker(rule) {}
};

// One timed sample of a variant, in seconds per launch; nullopt after a failure, which the
// callback has recorded itself. `throttled` is what the backend saw after the sample.
struct TakenSample {
  double seconds = 0;
  bool throttled = false;
};
using SampleTaker =
    std::function<std::optional<TakenSample>(std::size_t variant, std::uint32_t round)>;

// Samples until every variant is done (or a paired verdict is reached). Returns false as soon
// as a sample fails. `wall_elapsed_s` is the time cap's clock: the timed launches since the
// sampling began, without warm-up and without the verification's own work.
bool run_sampling_rounds(const std::vector<SampledVariant*>& variants, const BenchOptions& options,
                         const SampleTaker& take, const std::function<double()>& wall_elapsed_s);

// After a variant's warm-up (`launches` launches in `warmup_s`): why its minimum sample count
// cannot be taken within min_samples_budget_s (a timeout), or nullopt. The time cap alone
// never fails a variant: it bounds the samples past the minimum.
std::optional<std::string> too_slow_to_sample(const std::string& label, double warmup_s,
                                              int launches, const StoppingRule& rule);

}  // namespace kopt
