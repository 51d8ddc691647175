#include "kopt/problem/precision.hpp"

#include <array>

#include "kopt/problem/problem.hpp"

namespace kopt {
namespace {

struct PrecisionInfo {
  Precision precision;
  std::string_view name;
  int tier;
};
constexpr std::array<PrecisionInfo, 7> k_precisions{{{Precision::int8, "int8", 0},
                                                     {Precision::fp8, "fp8", 1},
                                                     {Precision::f16, "f16", 2},
                                                     {Precision::bf16, "bf16", 2},
                                                     {Precision::tf32, "tf32", 3},
                                                     {Precision::f32, "f32", 4},
                                                     {Precision::f64, "f64", 5}}};

const PrecisionInfo& info(Precision p) {
  for (const auto& i : k_precisions)
    if (i.precision == p) return i;
  return k_precisions[0];
}

}  // namespace

std::optional<Precision> parse_precision(std::string_view name) {
  for (const auto& i : k_precisions)
    if (i.name == name) return i.precision;
  return std::nullopt;
}

std::string_view precision_name(Precision p) {
  return info(p).name;
}

std::string known_precisions() {
  std::string s;
  for (const auto& i : k_precisions) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

std::optional<Precision> dtype_precision(DType t) {
  switch (t) {
    case DType::f64:
      return Precision::f64;
    case DType::f32:
      return Precision::f32;
    case DType::f16:
      return Precision::f16;
    case DType::bf16:
      return Precision::bf16;
    case DType::i8:
    case DType::u8:
      return Precision::int8;
    default:
      return std::nullopt;
  }
}

bool precision_at_least(Precision have, Precision need) {
  return info(have).tier >= info(need).tier;
}

AllowedPrecision allowed_precision(const Problem& p, const KernelSpec* kernel) {
  if (kernel && kernel->precision)
    return {*kernel->precision, "kernel '" + kernel->name + "' precision (kopt.toml)", true};
  if (p.precision) return {*p.precision, "the problem's precision (kopt.toml)", true};
  std::optional<Precision> lowest;
  for (const auto& t : p.tensors)
    if (auto tp = dtype_precision(t.dtype); tp && (!lowest || !precision_at_least(*tp, *lowest)))
      lowest = tp;
  return {lowest.value_or(Precision::f32), "the problem's tensors"};
}

}  // namespace kopt
