#pragma once
// The Python that `kopt export` writes around a kernel (export_model_new.cpp,
// export_solve.cpp): kopt's tensors bound from forward's arguments and the model's weights,
// dims read from the extents, results allocated, the Triton call, and a Model of a problem
// that was not imported from KernelBench.
#include <string>
#include <vector>

#include "export_parts.hpp"
#include "kopt/problem/export.hpp"

namespace kopt::detail {

// Dims and tensors are names in the code written: none may be a keyword or a name it uses.
Expected<void> check_code_names(const Problem& p, bool cpp);

struct ModelPart {
  std::string text;          // Model, get_inputs, get_init_inputs (and the imports they need)
  std::string code;          // what Model calls, written after the shared helpers
  KernelBenchRecord record;  // forward's arguments, the weights and forward's results
};
// The Model of a problem with no model.py: forward computes the reference (ref.py, or a CUDA
// reference through load_inline); get_inputs draws the inputs at the problem's dims.
Expected<ModelPart> reference_model(const ExportContext& c, const ExportSources& src);

// The module-level code every exported Python file shares: the tensors read and written, their
// dtypes, how forward's arguments and the model's weights bind to them, where each dim comes
// from, every shape as code, and the helpers (_kopt_bind, _kopt_prepare, _kopt_returned,
// _kopt_module, _kopt_extension).
Expected<std::string> python_common(const ExportContext& c, const KernelBenchRecord& record);

// _kopt_run_triton(tensors): the kernel's run_kernel called as kopt's worker calls it.
Expected<std::string> triton_call(const ExportContext& c);

// _KOPT_REFERENCE_* and _kopt_reference(): the CUDA reference as a torch extension.
Expected<std::string> reference_extension(const ExportContext& c, const ExportSources& src);

Expected<Export> export_model_new(const ExportContext& c, const ExportSources& src);
Expected<Export> export_solve(const ExportContext& c, const ExportSources& src);

}  // namespace kopt::detail
