#include "kopt/backend/sampling_rounds.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kopt {

std::optional<std::string> too_slow_to_sample(const std::string& label, double warmup_s,
                                              int launches, const StoppingRule& rule) {
  const double launch_s = warmup_s / std::max(launches, 1);
  const double need_s = launch_s * static_cast<double>(rule.min_samples);
  const double budget_s = min_samples_budget_s(rule);
  if (need_s <= budget_s) return std::nullopt;
  return fmt::format(
      "one launch of {} takes {:.3g} s: its minimum of {} samples would take {:.3g} s, past {:.3g} "
      "s (the larger of the time cap and {:.0f} s)",
      label, launch_s, rule.min_samples, need_s, budget_s, k_min_samples_budget_s);
}

bool run_sampling_rounds(const std::vector<SampledVariant*>& variants, const BenchOptions& opt,
                         const SampleTaker& take, const std::function<double()>& wall_elapsed_s) {
  const bool paired = opt.paired && variants.size() == 2;
  for (std::uint32_t round = 0;; ++round) {
    for (std::size_t k = 0; k < variants.size(); ++k) {
      std::size_t idx = (round % 2 == 0) ? k : variants.size() - 1 - k;
      SampledVariant& v = *variants[idx];
      if (v.done && !paired) continue;
      auto s = take(idx, round);
      if (!s) return false;
      v.series.samples_s.push_back(s->seconds);
      v.series.throttled.push_back(s->throttled);
      StopReason r = v.tracker.add(s->seconds, wall_elapsed_s());
      if ((!v.done && r != StopReason::not_yet) || r == StopReason::time_cap) {
        v.done = true;
        v.series.stop = r;
      }
    }
    bool all_done = true;
    for (auto* v : variants) all_done = all_done && v->done;
    if (all_done) return true;
    std::size_t pairs = variants[0]->series.samples_s.size();
    if (paired && pairs >= opt.rule.min_samples && pairs % 16 == 0) {
      Comparison c = compare_paired(variants[0]->series.samples_s, variants[1]->series.samples_s,
                                    opt.verdict_threshold);
      if (c.verdict != Verdict::ambiguous) {
        for (auto* v : variants)
          if (!v->done) {
            v->done = true;
            v->series.stop = StopReason::verdict_reached;
          }
        return true;
      }
    }
  }
}

}  // namespace kopt
