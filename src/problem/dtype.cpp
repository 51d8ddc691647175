#include "kopt/problem/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "draw_element_host.hpp"

namespace kopt {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
};
constexpr std::array<DTypeInfo, 9> k_dtypes{{{DType::f64, "f64", 8},
                                             {DType::f32, "f32", 4},
                                             {DType::f16, "f16", 2},
                                             {DType::bf16, "bf16", 2},
                                             {DType::i64, "i64", 8},
                                             {DType::i32, "i32", 4},
                                             {DType::i16, "i16", 2},
                                             {DType::i8, "i8", 1},
                                             {DType::u8, "u8", 1}}};

template <class T>
T load(const std::byte* data, std::size_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store(std::byte* data, std::size_t i, T v) {
  std::memcpy(data + i * sizeof(T), &v, sizeof(T));
}
template <class T>
T saturate(double v) {
  // Integers: round to nearest, clamp to the type's range (inputs come from bounded inits).
  using limits = std::numeric_limits<T>;
  return static_cast<T>(draw_element::kopt_saturate(
      v, static_cast<double>(limits::min()), static_cast<double>(limits::max()),
      static_cast<long long>(limits::min()), static_cast<long long>(limits::max())));
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& d : k_dtypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

std::string_view dtype_name(DType t) {
  return k_dtypes[static_cast<int>(t)].name;
}
std::size_t dtype_size(DType t) {
  return k_dtypes[static_cast<int>(t)].size;
}
bool is_float(DType t) {
  return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

std::string known_dtypes() {
  std::string out;
  for (const auto& d : k_dtypes) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

std::uint16_t float_to_half(float f) {
  return draw_element::kopt_float_to_half(f);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_bfloat16(float f) {
  return draw_element::kopt_float_to_bfloat16(f);
}

float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

double load_as_double(const std::byte* data, std::size_t i, DType t) {
  switch (t) {
    case DType::f64:
      return load<double>(data, i);
    case DType::f32:
      return load<float>(data, i);
    case DType::f16:
      return half_to_float(load<std::uint16_t>(data, i));
    case DType::bf16:
      return bfloat16_to_float(load<std::uint16_t>(data, i));
    case DType::i64:
      return static_cast<double>(load<std::int64_t>(data, i));
    case DType::i32:
      return load<std::int32_t>(data, i);
    case DType::i16:
      return load<std::int16_t>(data, i);
    case DType::i8:
      return load<std::int8_t>(data, i);
    case DType::u8:
      return load<std::uint8_t>(data, i);
  }
  return 0.0;
}

void store_from_double(std::byte* data, std::size_t i, DType t, double v) {
  switch (t) {
    case DType::f64:
      store(data, i, v);
      break;
    case DType::f32:
      store(data, i, static_cast<float>(v));
      break;
    case DType::f16:
      store(data, i, float_to_half(static_cast<float>(v)));
      break;
    case DType::bf16:
      store(data, i, float_to_bfloat16(static_cast<float>(v)));
      break;
    case DType::i64:
      store(data, i, saturate<std::int64_t>(v));
      break;
    case DType::i32:
      store(data, i, saturate<std::int32_t>(v));
      break;
    case DType::i16:
      store(data, i, saturate<std::int16_t>(v));
      break;
    case DType::i8:
      store(data, i, saturate<std::int8_t>(v));
      break;
    case DType::u8:
      store(data, i, saturate<std::uint8_t>(v));
      break;
  }
}

Poison poison_for(DType t) {
  switch (t) {
    case DType::f64:
      return {0x7ff87ff8u, 4};  // 0x7ff87ff87ff87ff8: a quiet NaN
    case DType::f32:
      return {0x7fc00000u, 4};
    case DType::f16:
      return {0x7e00u, 2};
    case DType::bf16:
      return {0x7fc0u, 2};
    case DType::i64:
      return {0xdeadbeefu, 4};
    case DType::i32:
      return {0xdeadbeefu, 4};
    case DType::i16:
      return {0xbeefu, 2};
    case DType::i8:
      return {0xa5u, 1};
    case DType::u8:
      return {0xa5u, 1};
  }
  return {0, 1};
}

Poison stale_fill_for(DType t, std::uint32_t random) {
  switch (t) {
    case DType::f64:
      return {0x3ff00000u | (random & 0xfffffu), 4};  // both halves: a double in [1, 2)
    case DType::f32:
      return {0x3f800000u | (random & 0x7fffffu), 4};
    case DType::f16:
      return {0x3c00u | (random & 0x3ffu), 2};
    case DType::bf16:
      return {0x3f80u | (random & 0x7fu), 2};
    case DType::i64:
    case DType::i32:
      return {0x01000000u | (random & 0xffffffu), 4};
    case DType::i16:
      return {0x0100u | (random & 0xffu), 2};
    case DType::i8:
    case DType::u8:
      return {0x40u | (random & 0x3fu), 1};
  }
  return {0, 1};
}

bool is_poison(const std::byte* data, std::size_t i, DType t) {
  Poison p = poison_for(t);
  std::size_t size = dtype_size(t);
  const std::byte* e = data + i * size;
  for (std::size_t b = 0; b < size; ++b) {
    auto want = static_cast<std::byte>(
        (p.pattern >> (8 * (b % static_cast<std::size_t>(p.width)))) & 0xffu);
    if (e[b] != want) return false;
  }
  return true;
}

}  // namespace kopt
