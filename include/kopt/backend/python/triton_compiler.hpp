#pragma once
// The "compiler" of Triton kernels: Triton compiles just in time, in the Python worker, so a
// build here is the kernel's .py file in the build cache (content-addressed). Params reach
// setup() / run_kernel() as keyword arguments, with every dim; a kernel that does not
// compile fails its first run, with Triton's message.
#include <string>
#include <vector>

#include "kopt/backend/build.hpp"

namespace kopt {

// The names of the @triton.jit functions of a Triton kernel's source: the names its GPU
// kernels carry, which ncu filters on (the .py's entry, run_kernel, is a Python function).
std::vector<std::string> triton_kernel_names(const std::string& source);

class TritonCompiler : public Compiler {
 public:
  Expected<std::string> toolkit() override;
  Expected<Build> compile(const CompileRequest& request,
                          const std::filesystem::path& module_path) override;
  bool concurrent() const override { return true; }  // a file copy
};

}  // namespace kopt
