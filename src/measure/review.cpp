#include "kopt/measure/review.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kopt {

std::optional<std::string> review_speedup_over_eager(double kernel_median_s,
                                                     double eager_median_s) {
  if (kernel_median_s <= 0 || eager_median_s <= 0) return std::nullopt;
  double speedup = eager_median_s / kernel_median_s;
  if (speedup <= k_review_speedup_over_eager) return std::nullopt;
  return fmt::format(
      "{:.1f}x faster than torch eager ({:.1f} us against {:.1f} us): above {:.0f}x, review it "
      "before "
      "believing it (KernelBench's rule)",
      speedup, kernel_median_s * 1e6, eager_median_s * 1e6, k_review_speedup_over_eager);
}

std::optional<std::string> review_against_ncu(double kopt_median_s, double ncu_duration_s) {
  if (kopt_median_s <= 0 || ncu_duration_s <= 0) return std::nullopt;
  double diff = std::abs(kopt_median_s - ncu_duration_s) / std::min(kopt_median_s, ncu_duration_s);
  if (diff <= k_review_ncu_disagreement) return std::nullopt;
  return fmt::format(
      "kopt's median {:.1f} us and ncu's gpu__time_duration {:.1f} us of the same build differ by "
      "{:.0f} % (more than {:.0f} %): one of them did not time what the other did (a kernel whose "
      "work depends on the launch, a cache kopt's flush left warm, clocks): look before trusting "
      "either",
      kopt_median_s * 1e6, ncu_duration_s * 1e6, 100 * diff, 100 * k_review_ncu_disagreement);
}

}  // namespace kopt
