#pragma once
// Seeded inputs, drawn element by element with the same bits on every machine and in every
// process. Element i of a tensor is a function of its recipe and i alone (a counter-based
// stream: splitmix64 of key + 2i), and the value is computed only with operations IEEE 754
// rounds one way (+, -, *, /, sqrt, frexp, integer arithmetic; kopt's own log and cos made of
// them, never a fused multiply-add). So kopt's C++ and its Python worker (torch, on a CPU or a
// GPU: draw_tensor in python/kopt_python_worker.py, this file's twin) draw identical bytes
// without exchanging them, and a tensor of GBs never crosses a file on its way to a Python
// job. Change both together; PythonDraw.* in tests/python compares them bit for bit, and
// DeviceDraw.* in tests/gpu the device's draw (the same source as this one's) with this one.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kopt/problem/problem.hpp"

namespace kopt {

struct DrawRecipe {
  InitKind kind = InitKind::normal;
  double a = 0.0;
  double b = 1.0;
  std::uint64_t key = 0;  // from the seed and the tensor's name
  DType dtype = DType::f32;
};

// The recipe of `spec`'s tensor for `seed`.
DrawRecipe draw_recipe(const TensorSpec& spec, std::uint64_t seed);

// Element i's value before it is stored in the recipe's dtype.
double draw_value(const DrawRecipe& r, std::uint64_t i);

// Elements [begin, end) stored into `data` (the whole tensor's bytes) in the recipe's dtype.
void draw_values(const DrawRecipe& r, std::byte* data, std::size_t begin, std::size_t end);

// Whether element i of a mix under `mix` (nonzero) takes the second recipe's value rather than
// the first's: what the device's draw of a mix does (kopt_mix_takes in draw_element.inc).
bool mix_takes(std::uint64_t mix, std::uint64_t i);

// The source of the element draw and of the stores (src/problem/draw_element.inc), which
// this file compiles for the host and the CUDA executor compiles for the device: kopt's own
// kernels' inputs drawn where they run, with these bits.
const char* draw_element_source();

// What stands for a drawn input's checksum where no process has its bytes: "drawn-" and the
// key. A run that leaves the input as drawn reports this token back (RunResult::input_checksums).
std::string draw_token(const DrawRecipe& r);

}  // namespace kopt
