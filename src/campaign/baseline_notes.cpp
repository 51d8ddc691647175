#include "kopt/campaign/baseline_notes.hpp"

#include <fmt/format.h>

namespace kopt::campaign {

std::vector<std::string> torch_baseline_flags(const SampleSeries& series, const Summary& summary,
                                              std::size_t throttled_samples, double noisy_above) {
  std::vector<std::string> reasons;
  if (series.recompiles > 0)
    reasons.push_back(fmt::format("torch.compile recompiled {} time{} while it was timed",
                                  series.recompiles, series.recompiles == 1 ? "" : "s"));
  if (series.graph_breaks > 0)
    reasons.push_back(fmt::format(
        "{} graph break{}: the compiled call runs as several graphs with Python between them",
        series.graph_breaks, series.graph_breaks == 1 ? "" : "s"));
  double device_us = summary.median * 1e6;
  if (series.launch_overhead_us > 0 && device_us > 0 && series.launch_overhead_us > device_us)
    reasons.push_back(fmt::format(
        "Python overhead: a call takes {:.1f} us on the host against {:.1f} us on the GPU",
        series.launch_overhead_us, device_us));
  if (throttled_samples > 0)
    reasons.push_back(fmt::format("the GPU reported throttling after {} of {} samples",
                                  throttled_samples, summary.n));

  std::vector<std::string> flags;
  bool noisy = summary.n > 1 && summary.rel_noise > noisy_above;
  if (noisy) {
    std::string why;
    for (const auto& r : reasons) why += "; " + r;
    if (why.empty())
      why = "; no cause seen (no recompilation, graph break, Python overhead or throttling)";
    flags.push_back(
        fmt::format("noisy: {:.1f} % spread between samples{}", 100 * summary.rel_noise, why));
  } else if (series.recompiles > 0) {
    flags.push_back(reasons.front());  // a recompilation inside the timing matters even when quiet
  }
  return flags;
}

}  // namespace kopt::campaign
