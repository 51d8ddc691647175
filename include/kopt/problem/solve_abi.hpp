#pragma once
// The solve() contract of existing kernel skills: a .cu exposing
//   extern "C" void solve(const float* input, float* output, int N)
// (or `const char* solve(...)`, returning a message when it cannot run)
// built with nvcc into a shared library and called in the worker with device pointers.
// kopt reads the signature: a const pointer is an input tensor, any other pointer an output
// tensor, a scalar a dim or param; each is matched to the problem by its name.
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/dtype.hpp"

namespace kopt {

struct SolveParam {
  std::string name;
  std::string type;  // as declared, qualifiers and all: "const float* __restrict__"
  bool pointer = false;
  bool is_const = false;     // of a pointer: const data (an input)
  DType dtype = DType::f32;  // the element type of a pointer, else the scalar's type
  int line = 0;              // in the source
};

// The parameters of `extern "C" void ENTRY(...)` in `source`; bad input (naming `file` and
// the line) when there is no such function or a parameter's type is not one kopt passes.
Expected<std::vector<SolveParam>> parse_solve_signature(const std::string& source,
                                                        const std::string& entry,
                                                        const std::string& file);

// The parameters of the C parameter list that starts at `open` of `source` (just after its
// '('), read as parse_solve_signature reads them; OpenCL's __global is skipped and __constant
// read as const.
Expected<std::vector<SolveParam>> parse_parameter_list(const std::string& source, std::size_t open,
                                                       const std::string& entry,
                                                       const std::string& file);

// A kernel kopt launches itself: a CUDA __global__ or an OpenCL __kernel function.
struct KernelSignature {
  std::string entry;
  std::vector<SolveParam> params;
  int line = 0;
};

// Every __global__ (CUDA) or __kernel (`opencl`) function of `source` that is no template, in
// source order; bad input (naming `file` and the line) for a parameter kopt cannot pass.
Expected<std::vector<KernelSignature>> parse_kernel_signatures(const std::string& source,
                                                               bool opencl,
                                                               const std::string& file);

// Whether ENTRY returns `const char*`: a message when it cannot run (a library that refuses
// the shape), nullptr when it ran; the candidate then fails with that message.
bool solve_returns_message(const std::string& source, const std::string& entry);

// C++ appended to the source before nvcc builds it: `extern "C" const char*
// kopt_solve_shim(void** a)` calls ENTRY with *(T*)a[i] for each parameter (the
// cuLaunchKernel convention, so the worker packs arguments as for a kernel) and returns
// ENTRY's message when it returns one, else nullptr, or cudaGetErrorString of what
// cudaGetLastError() then says.
std::string solve_shim_source(const std::vector<SolveParam>& params, const std::string& entry,
                              bool returns_message = false);

}  // namespace kopt
