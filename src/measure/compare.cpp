#include "kopt/measure/compare.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kopt {

namespace {

// The element loop, with how to read element i (as a double) and whether it is still poison.
template <class Load, class Poisoned>
void compare_elements(CompareResult& r, Load got_at, Load expected_at, Poisoned poisoned,
                      Tolerance tol, std::size_t max_reported,
                      const std::vector<std::int64_t>& shape) {
  double diff_sq = 0.0, ref_sq = 0.0;
  for (std::size_t i = 0; i < r.numel; ++i) {
    double g = got_at(i);
    double e = expected_at(i);
    if (poisoned(i)) ++r.unwritten;
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
        r.first_mismatches.push_back({i, unflatten(i, shape), g, e});
      ++r.mismatches;
    }
  }
  r.rel_l2_err = ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
}

}  // namespace

CompareResult compare_tensors(const HostTensor& got, const HostTensor& expected, Tolerance tol,
                              std::size_t max_reported) {
  CompareResult r;
  r.tensor = expected.name;
  r.tolerance = tol;
  r.numel = std::min(got.numel(), expected.numel());
  const bool size_ok = got.numel() == expected.numel() && got.dtype == expected.dtype;
  const std::byte* gd = got.data.data();
  const std::byte* ed = expected.data.data();
  if (size_ok && got.dtype == DType::f32) {
    // The common case without a switch per element: millions of floats per candidate.
    auto word = [](const std::byte* d, std::size_t i) {
      std::uint32_t w;
      std::memcpy(&w, d + 4 * i, 4);
      return w;
    };
    auto as_float = [&](const std::byte* d) {
      return [d, &word](std::size_t i) {
        std::uint32_t w = word(d, i);
        float f;
        std::memcpy(&f, &w, 4);
        return static_cast<double>(f);
      };
    };
    const std::uint32_t poison = poison_for(DType::f32).pattern;
    compare_elements(
        r, as_float(gd), as_float(ed), [&](std::size_t i) { return word(gd, i) == poison; }, tol,
        max_reported, expected.shape);
  } else {
    auto load = [](const std::byte* d, DType t) {
      return [d, t](std::size_t i) { return load_as_double(d, i, t); };
    };
    compare_elements(
        r, load(gd, got.dtype), load(ed, expected.dtype),
        [&](std::size_t i) { return is_poison(gd, i, got.dtype); }, tol, max_reported,
        expected.shape);
  }
  r.passed = size_ok && r.mismatches == 0;
  return r;
}

double relative_l2(const HostTensor& got, const HostTensor& exact) {
  std::size_t n = got.numel();
  if (n != exact.numel() || got.bytes() < n * dtype_size(got.dtype) ||
      exact.bytes() < n * dtype_size(exact.dtype))
    return -1;
  double diff_sq = 0, ref_sq = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double g = load_as_double(got.data.data(), i, got.dtype);
    double e = load_as_double(exact.data.data(), i, exact.dtype);
    if (!std::isfinite(g) || !std::isfinite(e)) continue;
    ++finite;
    diff_sq += (g - e) * (g - e);
    ref_sq += e * e;
  }
  if (finite == 0) return -1;
  return ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
}

double rms(const HostTensor& t) {
  std::size_t n = std::min(t.numel(), t.bytes() / dtype_size(t.dtype));
  double sq = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double v = load_as_double(t.data.data(), i, t.dtype);
    if (!std::isfinite(v)) continue;
    sq += v * v;
    ++finite;
  }
  return finite ? std::sqrt(sq / static_cast<double>(finite)) : 0.0;
}

}  // namespace kopt
