#include "kopt/measure/compare.hpp"

#include <cmath>

namespace kopt {

CompareResult compare_tensors(const HostTensor& got, const HostTensor& expected, Tolerance tol,
                              std::size_t max_reported) {
  CompareResult r;
  r.tensor = expected.name;
  r.tolerance = tol;
  r.numel = std::min(got.numel(), expected.numel());
  const bool size_ok = got.numel() == expected.numel() && got.dtype == expected.dtype;
  double diff_sq = 0.0, ref_sq = 0.0;
  for (std::size_t i = 0; i < r.numel; ++i) {
    double g = load_as_double(got.data.data(), i, got.dtype);
    double e = load_as_double(expected.data.data(), i, expected.dtype);
    if (is_poison(got.data.data(), i, got.dtype)) ++r.unwritten;
    if (std::isnan(g)) ++r.nan_count;
    if (std::isinf(g)) ++r.inf_count;
    bool ok;
    if (std::isnan(e) || std::isinf(e) || std::isnan(g) || std::isinf(g)) {
      ok = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && g == e);
      if (!ok) r.max_abs_err = INFINITY;
    } else {
      double diff = std::fabs(g - e);
      ok = diff <= tol.atol + tol.rtol * std::fabs(e);
      r.max_abs_err = std::max(r.max_abs_err, diff);
      if (e != 0.0) r.max_rel_err = std::max(r.max_rel_err, diff / std::fabs(e));
      diff_sq += diff * diff;
      ref_sq += e * e;
    }
    if (!ok) {
      if (r.first_mismatches.size() < max_reported)
        r.first_mismatches.push_back({i, unflatten(i, expected.shape), g, e});
      ++r.mismatches;
    }
  }
  r.rel_l2_err = ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  r.passed = size_ok && r.mismatches == 0;
  return r;
}

}  // namespace kopt
