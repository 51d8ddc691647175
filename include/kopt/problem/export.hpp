#pragma once
// A problem's kernel at one parameter point, written out in the formats others read
// (`kopt export`, docs/bare-files.md): a KernelBench ModelNew file (the problem's Model, and a
// ModelNew that computes forward's results with the kernel: CUDA through
// torch.utils.cpp_extension.load_inline, Triton by calling its run_kernel), or a solve() .cu
// with a ref.py, which `kopt check solve.cu --ref ref.py --dims ...` reads. Pure text: the
// files are read by read_export_sources and written by the caller.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

enum class ExportFormat { model_new, solve };

// What the writers read from the problem directory.
struct ExportSources {
  std::string kernel;     // the kernel's source, its local headers inlined (CUDA)
  std::string reference;  // ref.py, or a CUDA reference's source with its headers inlined
  std::optional<std::string> model_py;  // an imported KernelBench problem's model.py
};

// The sources of `kernel` and of the problem's reference. A `#include "x.cuh"` that names a
// file of the problem (beside the including file, in the problem dir or a kernel include_dir)
// is replaced by that file, once; other includes stay. Bad input: a source missing, or an
// include_dir from a Python package (a ModelNew file cannot carry it).
Expected<ExportSources> read_export_sources(const Problem& problem, const KernelSpec& kernel);

struct ExportRequest {
  ExportFormat format = ExportFormat::model_new;
  std::string arch;  // a -gencode target for the build ("sm_90"); empty: the kernel's own arch
                     // where it declares one, else the builder's default (the device's)
};

struct ExportedFile {
  std::string name;  // relative to where the export goes ("model_new.py", "solve.cu")
  std::string text;
};

struct Export {
  std::string language;                 // "cuda", "solve" or "triton": what the kernel is
  std::vector<ExportedFile> files;      // model_new: one; solve: solve.cu, ref.py, README.md...
  std::vector<std::string> fixed_dims;  // dims no input's shape gives: fixed at their values
  std::vector<std::string> notes;       // what a reader must know (printed, and in JSON)
  std::string dims_flag;                // "--dims M=1024,N=1024" (the problem's dims)
};

// The kernel at `point` (a point of its space, or the declared defaults) as `request.format`.
// Bad input, naming the spec's file, line and field, for what the format cannot carry: an
// OpenCL kernel, a tensor map argument, a C++ reference, an expression with no code.
Expected<Export> export_kernel(const Problem& problem, const KernelSpec& kernel,
                               const ParamPoint& point, const ExportRequest& request,
                               const ExportSources& sources);

}  // namespace kopt
