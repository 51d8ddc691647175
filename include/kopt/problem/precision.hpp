#pragma once
// The arithmetic precision a problem is solved in: what a kernel's matrix instructions may take
// as operands. An f32 problem multiplied in tf32, bf16 or fp8 passes a loose tolerance
// (KernelBench's 1e-2) and is still another computation; the check reads the machine code for
// it (analysis/sass_precision.hpp). A problem or one kernel may allow a lower precision.
#include <optional>
#include <string>
#include <string_view>

#include "kopt/problem/dtype.hpp"

namespace kopt {

// From the lowest to the highest; f16 and bf16 are one tier (16-bit floats: one has the
// mantissa, the other the range). int8 stands for every integer matrix operand (s8, u8, s4,
// b1): quantized arithmetic in a float problem.
enum class Precision { int8, fp8, f16, bf16, tf32, f32, f64 };

std::optional<Precision> parse_precision(std::string_view name);
std::string_view precision_name(Precision p);
std::string known_precisions();  // "int8, fp8, f16, bf16, tf32, f32, f64"
// The precision a tensor of this dtype holds (i8 and u8: int8; wider integers: none, they are
// indices or counts, not the arithmetic).
std::optional<Precision> dtype_precision(DType t);
// Whether operands in `have` compute a problem declared in `need` at no loss.
bool precision_at_least(Precision have, Precision need);

struct Problem;
struct KernelSpec;
// What a kernel of the problem may multiply in, and what said so: the kernel's `precision`,
// else the problem's, else the lowest precision among its tensors (an f32 problem: f32).
struct AllowedPrecision {
  Precision precision = Precision::f32;
  std::string from;       // "the problem's tensors", "kopt.toml precision", "kernel 'k' precision"
  bool declared = false;  // kopt.toml's `precision` (the problem's or the kernel's) said it
};
AllowedPrecision allowed_precision(const Problem& p, const KernelSpec* kernel);

}  // namespace kopt
