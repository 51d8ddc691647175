#include "kopt/backend/python/triton_compiler.hpp"

#include <regex>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {

std::vector<std::string> triton_kernel_names(const std::string& source) {
  // @triton.jit (or @triton.jit(...)), other decorators (autotune, heuristics) around it, then def
  // NAME(
  static const std::regex jit(
      R"(@triton\.jit\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def[ \t]+([A-Za-z_]\w*)[ \t]*\()");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), jit);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

Expected<std::string> TritonCompiler::toolkit() {
  return "Triton (JIT, " + python_executable() + ")";
}

Expected<Build> TritonCompiler::compile(const CompileRequest& req,
                                        const std::filesystem::path& module_path) {
  Build b;
  b.arch = req.arch;
  b.toolkit = *toolkit();
  b.module_kind = ModuleKind::triton;
  if (req.source_text.find(req.entry) == std::string::npos) {
    b.log = req.source_path.string() + ":1: kopt: no function '" + req.entry +
            "' (a Triton kernel's entry, e.g. run_kernel)";
    return b;
  }
  if (auto w = write_text_atomic(module_path, req.source_text); !w) return Unexpected(w.error());
  b.cubin_path = module_path;
  b.lowered_entry = req.entry;
  b.resources.source = "triton (jit)";
  b.ok = true;
  return b;
}

}  // namespace kopt
