#include "kopt/measure/review.hpp"

#include <fmt/format.h>

namespace kopt {

std::optional<std::string> review_speedup_over_eager(double kernel_median_s, double eager_median_s) {
  if (kernel_median_s <= 0 || eager_median_s <= 0) return std::nullopt;
  double speedup = eager_median_s / kernel_median_s;
  if (speedup <= k_review_speedup_over_eager) return std::nullopt;
  return fmt::format("{:.1f}x faster than torch eager ({:.1f} us against {:.1f} us): above {:.0f}x, review it before "
                     "believing it (KernelBench's rule)",
                     speedup, kernel_median_s * 1e6, eager_median_s * 1e6, k_review_speedup_over_eager);
}

}  // namespace kopt
