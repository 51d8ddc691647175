#pragma once
// Outputs and references that differ in every way compare_tensors tells apart (values equal,
// within, at and past the tolerance, a zero reference, the poison left behind, NaN and
// infinities on either side), for the tests that hold the device comparison to it
// (backend/output_compare_kernel.hpp): its host build and its OpenCL build on PoCL.
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "kopt/backend/output_compare_kernel.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::test {

inline constexpr DType k_compare_dtypes[] = {DType::f64,  DType::f32, DType::f16,
                                             DType::bf16, DType::i64, DType::i32,
                                             DType::i16,  DType::i8,  DType::u8};

inline HostTensor compare_tensor(const char* name, DType t, std::size_t n) {
  return HostTensor{
      name, t, {static_cast<std::int64_t>(n / 8), 8}, std::vector<std::byte>(n * dtype_size(t))};
}

inline void put_bits(HostTensor& t, std::size_t i, std::uint64_t bits) {
  std::memcpy(t.data.data() + i * dtype_size(t.dtype), &bits, dtype_size(t.dtype));
}

// A reference and an output of n elements that differ in every way the rule tells apart.
inline std::pair<HostTensor, HostTensor> compare_cases(DType t, Tolerance tol, std::uint32_t seed,
                                                       std::size_t n) {
  HostTensor expected = compare_tensor("y", t, n), got = compare_tensor("y", t, n);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, is_float(t) ? 3.0 : 40.0);
  std::uniform_int_distribution<int> kind(0, 15);
  const double inf = INFINITY, nan = NAN;
  for (std::size_t i = 0; i < n; ++i) {
    double e = is_float(t) ? normal(rng) : std::round(normal(rng));
    if (t == DType::u8) e = std::fabs(e);
    store_from_double(expected.data.data(), i, t, e);
    e = load_as_double(expected.data.data(), i, t);  // as stored
    double g = e;
    switch (kind(rng)) {
      case 0:  // within the tolerance
        g = e + 0.5 * (tol.atol + tol.rtol * std::fabs(e));
        break;
      case 1:  // at the bound itself: a tie passes
        g = e + (tol.atol + tol.rtol * std::fabs(e));
        break;
      case 2:  // past it
        g = e + 3 * (tol.atol + tol.rtol * std::fabs(e)) + (is_float(t) ? 0.25 : 2.0);
        break;
      case 3:  // a zero reference: no relative error
        store_from_double(expected.data.data(), i, t, 0.0);
        g = is_float(t) ? 1e-3 : 1.0;
        break;
      case 4:  // the poison left behind
        store_from_double(got.data.data(), i, t, g);
        put_bits(got, i, compare_poison_bits(t));
        continue;
      case 5:
        if (is_float(t)) {
          store_from_double(expected.data.data(), i, t, nan);
          g = (i % 2) ? nan : 1.0;
        }
        break;
      case 6:
        if (is_float(t)) {
          store_from_double(expected.data.data(), i, t, (i % 2) ? inf : -inf);
          g = (i % 3 == 0) ? inf : (i % 3 == 1 ? -inf : 7.0);
        }
        break;
      case 7:
        if (is_float(t)) g = (i % 2) ? nan : inf;
        break;
      default:
        break;
    }
    store_from_double(got.data.data(), i, t, g);
  }
  return {got, expected};
}

}  // namespace kopt::test
