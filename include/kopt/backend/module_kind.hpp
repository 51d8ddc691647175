#pragma once
#include <optional>
#include <string_view>

namespace kopt {

// What a job runs: a device binary (a cubin, or an OpenCL module), a C++ reference library,
// a solve() library (nvcc -shared, called with device pointers), or Python run by the Python
// worker: a ref.py reference, a Triton kernel, or the PyTorch reference as a baseline (eager,
// or through torch.compile). The Python kinds come last (is_python).
enum class ModuleKind {
  cubin,
  cpu_library,
  solve_library,
  python_reference,
  triton,
  torch_eager,
  torch_compile
};
std::string_view module_kind_name(ModuleKind k);
std::optional<ModuleKind> parse_module_kind(std::string_view name);
inline bool is_python(ModuleKind k) {
  return k >= ModuleKind::python_reference;
}

}  // namespace kopt
