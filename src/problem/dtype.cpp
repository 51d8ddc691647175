#include "kopt/problem/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

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
  double r = std::nearbyint(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (!(r >= lo)) return std::numeric_limits<T>::min();
  if (r >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
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
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {                                                    // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into inf: correct
  return static_cast<std::uint16_t>(half);
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
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
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
