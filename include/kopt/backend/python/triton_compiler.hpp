#pragma once
// The "compiler" of Triton kernels: Triton compiles just in time, in the Python worker, so a
// build here is the kernel's .py file in the build cache (content-addressed). Params reach
// setup() / run_kernel() as keyword arguments, with every dim; a kernel that does not
// compile fails its first run, with Triton's message.
#include "kopt/backend/build.hpp"

namespace kopt {

class TritonCompiler : public Compiler {
 public:
  Expected<std::string> toolkit() override;
  Expected<Build> compile(const CompileRequest& request, const std::filesystem::path& module_path) override;
  bool concurrent() const override { return true; }  // a file copy
};

}  // namespace kopt
