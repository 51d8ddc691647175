#pragma once
// What the writers of `kopt export` share (kopt/problem/export.hpp): where dims come from at
// run time, the CUDA launch function and its torch binding, Python literals, and the record an
// imported KernelBench problem keeps in ref.py.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt::detail {

// Where a dim's value comes from when the exported code runs: an extent of a tensor the
// kernel reads (the first whose shape names the dim bare), else fixed at its value.
struct DimSource {
  std::string dim;
  std::string tensor;  // empty: fixed
  std::size_t axis = 0;
  std::int64_t value = 0;
};
std::vector<DimSource> dim_sources(const Problem& p);

// The tensors the kernel reads (inputs and inouts) and those it writes (outputs and inouts),
// in kopt.toml's order.
std::vector<const TensorSpec*> read_tensors(const Problem& p);
std::vector<const TensorSpec*> result_tensors(const Problem& p);

std::string c_type(DType t);           // "float", "__half", "int64_t"
std::string torch_cpp_dtype(DType t);  // "torch::kFloat"
std::string torch_py_dtype(DType t);   // "torch.float32"

// Bad input at `where` of the problem's kopt.toml.
Error refusal(const Problem& p, const SourceRef& where, std::string why);

// A C++ string literal, and a Python one ("..." with JSON's escapes, which Python reads too).
std::string cpp_string(const std::string& s);
std::string python_string(const std::string& s);
// A Python literal holding a whole source file: a raw triple-quoted string where the text
// allows it, else an escaped one.
std::string python_text(const std::string& text);

// "--dims M=1024,N=1024": the problem's dims as kopt's commands take them.
std::string dims_flag(const Problem& p);

// `#ifndef P` / `#define P v` / `#endif` for each param of the point.
std::string param_defines(const ParamPoint& point);

// The CUDA launch function of `kernel` (a __global__ kernel, or a solve() it calls):
//   static const char* FUNCTION(const T* <input>..., T* <output>..., int64_t <dim>...,
//                               cudaStream_t kopt_stream)
// (every tensor in kopt.toml's order, const where the kernel only reads it; every dim) that
// checks the constraints, computes the launch from kopt.toml's expressions, launches and
// returns nullptr, or why it could not. `source` is the kernel's source; the params are its
// #defines. Preceded by the integer helpers and the includes it needs.
Expected<std::string> cuda_launch_code(const Problem& p, const KernelSpec& kernel,
                                       const ParamPoint& point, const std::string& source,
                                       const std::string& function);

// A torch extension's function `std::vector<torch::Tensor> BINDING(torch::Tensor <read>...)`
// over FUNCTION: checks each tensor's dtype, rank and extents, takes the dims from the
// extents, allocates the outputs (inouts cloned) and returns what the kernel wrote, in
// kopt.toml's order. `declaration` is its prototype for load_inline's cpp_sources.
struct TorchBinding {
  std::string code;
  std::string declaration;
};
Expected<TorchBinding> torch_binding(const Problem& p, const std::string& function,
                                     const std::string& binding);

// Python code of a kopt.toml expression over dims (named as they are) and the point's
// params (their values).
Expected<std::string> python_code(const Problem& p, const Expr& e, const SourceRef& where,
                                  const ParamPoint& point);

// An imported KernelBench problem's record of how Model.forward maps onto kopt's tensors, as
// kopt import writes it into ref.py (FORWARD, PARAMETERS, OUTPUTS).
struct KernelBenchRecord {
  std::vector<std::pair<std::string, std::string>> forward;     // ("tensor", name) or constant
  std::vector<std::pair<std::string, std::string>> parameters;  // model's name -> tensor
  std::vector<std::string> outputs;
};
Expected<KernelBenchRecord> read_kernelbench_record(const Problem& p, const std::string& ref_py);

// A module-level `NAME = <number>` of a Python file (ref.py's atol, rtol).
std::optional<double> python_number(const std::string& text, const std::string& name);

// The model.py / ref.py writers of export_kernel (export_model_new.cpp, export_solve.cpp).
struct ExportContext {
  const Problem& problem;
  const KernelSpec& kernel;
  const ParamPoint& point;
  std::string arch;  // a -gencode target, or empty
  std::string tag;   // a short hash of what is exported: unique module names
};
std::vector<std::string> cuda_build_flags(const ExportContext& c, const KernelSpec& k);

}  // namespace kopt::detail
