#pragma once
// Compiles CUDA C++ to a cubin in-process with NVRTC (no GPU needed); a solve() kernel
// (request.solve_abi) is built by nvcc into a shared library instead.
#include "kopt/backend/build.hpp"

namespace kopt::cuda {

class NvrtcCompiler final : public Compiler {
 public:
  Expected<std::string> toolkit() override;
  Expected<Build> compile(const CompileRequest& request,
                          const std::filesystem::path& cubin_path) override;
  // NVRTC compiles separate programs on separate threads; nvcc runs as a process each.
  bool concurrent() const override { return true; }
};

// nvcc -shared on the source plus a generated shim; a Build with the log when it fails.
Expected<Build> compile_solve_library(const CompileRequest& request,
                                      const std::filesystem::path& library_path);

// The architectures this NVRTC can target, e.g. {"sm_75", ..., "sm_120"}.
Expected<std::vector<std::string>> nvrtc_supported_archs();
// The CUDA include directory to add for headers NVRTC does not carry built in.
std::vector<std::filesystem::path> cuda_include_dirs();

}  // namespace kopt::cuda
