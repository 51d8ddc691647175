#pragma once
// One compiler for a problem's kernels of several languages: each request goes to the
// compiler of its source's language (.cu: NVRTC, or nvcc for a solve() library; .py: Triton;
// .cl: the OpenCL driver), so CUDA and Triton kernels of one problem are built, checked and
// timed side by side.
#include <map>
#include <string>

#include "kopt/backend/build.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

class LanguageCompiler : public Compiler {
 public:
  // The compilers are not owned; a language without one is refused at build time.
  explicit LanguageCompiler(std::map<KernelLanguage, Compiler*> compilers);
  // Every language's toolkit, "NVRTC 13.0 + Triton (JIT, python3)"; an Error when the first
  // language's compiler is unavailable.
  Expected<std::string> toolkit() override;
  Expected<std::string> toolkit_for(const CompileRequest& request) override;
  Expected<Build> compile(const CompileRequest& request,
                          const std::filesystem::path& module_path) override;
  // Builds run on several threads only when every language's compiler allows it.
  bool concurrent() const override;

 private:
  Expected<Compiler*> compiler_for(const CompileRequest& request) const;
  std::map<KernelLanguage, Compiler*> m_compilers;
};

}  // namespace kopt
