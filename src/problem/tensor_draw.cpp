// Compiled with -ffp-contract=off (CMakeLists.txt): a multiply and an add stay two roundings,
// as they are in the Python twin (one torch operation each).
#include "kopt/problem/tensor_draw.hpp"

#include <array>
#include <cmath>
#include <span>

#include "kopt/core/hash.hpp"
#include "kopt/problem/dtype.hpp"

namespace kopt {
namespace {

std::uint64_t mix64(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1): a multiple of 2^-53.
double unit(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

constexpr int k_log_terms = 13;  // s^(2k+1) / (2k+1) below 1e-18 past it, |s| <= 0.1716
constexpr int k_cos_terms = 16;  // x^(2k) / (2k)! below 1e-19 past it, |x| <= pi
constexpr double k_ln2 = 0x1.62e42fefa39efp-1;
constexpr double k_sqrt_half = 0x1.6a09e667f3bcdp-1;
constexpr double k_two_pi = 0x1.921fb54442d18p+2;

// The series' coefficients, each made by one division, as the Python twin makes them.
const std::array<double, k_log_terms>& log_coefficients() {
  static const auto c = [] {
    std::array<double, k_log_terms> a{};
    for (int k = 0; k < k_log_terms; ++k) a[k] = 1.0 / static_cast<double>(2 * k + 1);
    return a;
  }();
  return c;
}
const std::array<double, k_cos_terms>& cos_coefficients() {
  static const auto c = [] {
    std::array<double, k_cos_terms> a{};
    a[0] = 1.0;
    for (int k = 1; k < k_cos_terms; ++k)
      a[k] = -a[k - 1] / static_cast<double>((2 * k - 1) * (2 * k));
    return a;
  }();
  return c;
}

// log(u) for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
// s = (m - 1) / (m + 1), by its series.
double draw_log(double u) {
  int e = 0;
  double m = std::frexp(u, &e);
  if (m < k_sqrt_half) {
    m = m * 2.0;
    e = e - 1;
  }
  double s = (m - 1.0) / (m + 1.0);
  double z = s * s;
  const auto& c = log_coefficients();
  double p = c[k_log_terms - 1];
  for (int k = k_log_terms - 2; k >= 0; --k) p = p * z + c[k];
  return static_cast<double>(e) * k_ln2 + (s * 2.0) * p;
}

// cos(2 pi t) for t in [0, 1): -cos(x) with x = 2 pi (t - 1/2) in [-pi, pi), by its series.
double draw_cos_2pi(double t) {
  double x = (t - 0.5) * k_two_pi;
  double y = x * x;
  const auto& c = cos_coefficients();
  double p = c[k_cos_terms - 1];
  for (int k = k_cos_terms - 2; k >= 0; --k) p = p * y + c[k];
  return -p;
}

}  // namespace

DrawRecipe draw_recipe(const TensorSpec& spec, std::uint64_t seed) {
  return {spec.init.kind, spec.init.a, spec.init.b,
          mix64(seed ^ checksum64(std::as_bytes(std::span(spec.name)))), spec.dtype};
}

double draw_value(const DrawRecipe& r, std::uint64_t i) {
  switch (r.kind) {
    case InitKind::normal: {
      double u1 = 1.0 - unit(mix64(r.key + 2 * i));  // (0, 1]
      double u2 = unit(mix64(r.key + 2 * i + 1));
      double radius = std::sqrt(draw_log(u1) * -2.0);
      return (radius * r.b) * draw_cos_2pi(u2) + r.a;
    }
    case InitKind::uniform:
      return unit(mix64(r.key + 2 * i)) * (r.b - r.a) + r.a;
    case InitKind::randint: {
      double lo = std::ceil(r.a), span = std::ceil(r.b) - lo;
      return std::floor(unit(mix64(r.key + 2 * i)) * span) + lo;
    }
    case InitKind::arange:
      return static_cast<double>(i) * r.b + r.a;
    case InitKind::constant:
      return r.a;
  }
  return 0.0;
}

void draw_values(const DrawRecipe& r, std::byte* data, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) store_from_double(data, i, r.dtype, draw_value(r, i));
}

std::string draw_token(const DrawRecipe& r) {
  return "drawn-" + hex64(r.key);
}

}  // namespace kopt
