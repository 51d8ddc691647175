#include "kopt/measure/compare.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kopt/core/parallel.hpp"

namespace kopt {

namespace {

// Large tensors are compared in chunks of this many elements, spread over the machine's cores
// (a KernelBench output of 2^30 floats took about 10 s on one core). The chunks are fixed, so
// the sums merge in the same order whatever the number of threads: a result never depends on
// the machine, and a tensor of one chunk is compared exactly as one loop would.
constexpr std::size_t k_chunk = std::size_t{1} << 22;

template <class Part, class Fn>
std::vector<Part> by_chunk(std::size_t n, Fn&& fn) {
  const std::size_t chunks = std::max<std::size_t>(1, (n + k_chunk - 1) / k_chunk);
  std::vector<Part> parts(chunks);
  parallel_for(chunks, hardware_jobs(),
               [&](std::size_t c) { fn(parts[c], c * k_chunk, std::min(n, (c + 1) * k_chunk)); });
  return parts;
}

struct ComparePart {
  std::size_t unwritten = 0, nan_count = 0, inf_count = 0, mismatches = 0;
  double max_abs_err = 0, max_rel_err = 0, diff_sq = 0, ref_sq = 0;
  std::vector<Mismatch> first;
};

// The element loop, with how to read element i (as a double) and whether it is still poison.
template <class Load, class Poisoned>
void compare_elements(CompareResult& r, Load got_at, Load expected_at, Poisoned poisoned,
                      Tolerance tol, std::size_t max_reported,
                      const std::vector<std::int64_t>& shape) {
  auto parts =
      by_chunk<ComparePart>(r.numel, [&](ComparePart& p, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          double g = got_at(i);
          double e = expected_at(i);
          if (poisoned(i)) ++p.unwritten;
          if (std::isnan(g)) ++p.nan_count;
          if (std::isinf(g)) ++p.inf_count;
          bool ok;
          if (std::isnan(e) || std::isinf(e) || std::isnan(g) || std::isinf(g)) {
            ok = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && g == e);
            if (!ok) p.max_abs_err = INFINITY;
          } else {
            double diff = std::fabs(g - e);
            ok = diff <= tol.atol + tol.rtol * std::fabs(e);
            p.max_abs_err = std::max(p.max_abs_err, diff);
            if (e != 0.0) p.max_rel_err = std::max(p.max_rel_err, diff / std::fabs(e));
            p.diff_sq += diff * diff;
            p.ref_sq += e * e;
          }
          if (!ok) {
            if (p.first.size() < max_reported) p.first.push_back({i, unflatten(i, shape), g, e});
            ++p.mismatches;
          }
        }
      });
  double diff_sq = 0.0, ref_sq = 0.0;
  for (auto& p : parts) {  // in order: the first mismatches are the first in the tensor
    r.unwritten += p.unwritten;
    r.nan_count += p.nan_count;
    r.inf_count += p.inf_count;
    r.mismatches += p.mismatches;
    r.max_abs_err = std::max(r.max_abs_err, p.max_abs_err);
    r.max_rel_err = std::max(r.max_rel_err, p.max_rel_err);
    diff_sq += p.diff_sq;
    ref_sq += p.ref_sq;
    for (auto& m : p.first)
      if (r.first_mismatches.size() < max_reported) r.first_mismatches.push_back(std::move(m));
  }
  r.rel_l2_err = ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
}

// Two sums and a count, per chunk.
struct SumPart {
  double a = 0, b = 0;
  std::size_t finite = 0;
};

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
  auto parts = by_chunk<SumPart>(n, [&](SumPart& p, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      double g = load_as_double(got.data.data(), i, got.dtype);
      double e = load_as_double(exact.data.data(), i, exact.dtype);
      if (!std::isfinite(g) || !std::isfinite(e)) continue;
      ++p.finite;
      p.a += (g - e) * (g - e);
      p.b += e * e;
    }
  });
  for (const auto& p : parts) {
    diff_sq += p.a;
    ref_sq += p.b;
    finite += p.finite;
  }
  if (finite == 0) return -1;
  return ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
}

double rms(const HostTensor& t) {
  std::size_t n = std::min(t.numel(), t.bytes() / dtype_size(t.dtype));
  double sq = 0;
  std::size_t finite = 0;
  auto parts = by_chunk<SumPart>(n, [&](SumPart& p, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      double v = load_as_double(t.data.data(), i, t.dtype);
      if (!std::isfinite(v)) continue;
      p.a += v * v;
      ++p.finite;
    }
  });
  for (const auto& p : parts) {
    sq += p.a;
    finite += p.finite;
  }
  return finite ? std::sqrt(sq / static_cast<double>(finite)) : 0.0;
}

}  // namespace kopt
