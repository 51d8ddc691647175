#pragma once
// Element types of tensors and scalar arguments, with host-side conversions.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kopt {

enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, u8 };

std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType t);
std::size_t dtype_size(DType t);
bool is_float(DType t);
std::string known_dtypes();  // "f64, f32, ..." for error messages

// Reads element i of a buffer of type t as a double (exact for every type but i64 > 2^53).
double load_as_double(const std::byte* data, std::size_t i, DType t);
// Writes v into element i, rounding to nearest even for the narrow float types.
void store_from_double(std::byte* data, std::size_t i, DType t, double v);

std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(std::uint16_t b);

// The pattern outputs are filled with before each run: a quiet NaN for floats,
// an unlikely sentinel for integers. `width` is the memset width in bytes (1, 2 or 4).
struct Poison {
  std::uint32_t pattern;
  int width;
};
Poison poison_for(DType t);
// A fill that looks like a written output: finite values in [1, 2) (an integer pattern for
// integer types), varied by `random`. A kernel that skips its work when its output looks
// written, rather than poisoned, is caught by it (output_verifier.hpp).
Poison stale_fill_for(DType t, std::uint32_t random);
bool is_poison(const std::byte* data, std::size_t i, DType t);

}  // namespace kopt
