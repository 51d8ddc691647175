#include "kopt/backend/language_compiler.hpp"

#include <algorithm>

namespace kopt {

LanguageCompiler::LanguageCompiler(std::map<KernelLanguage, Compiler*> compilers)
    : m_compilers(std::move(compilers)) {}

Expected<Compiler*> LanguageCompiler::compiler_for(const CompileRequest& request) const {
  KernelLanguage l = language_of(request.source_path);
  auto it = m_compilers.find(l);
  if (it == m_compilers.end() || !it->second)
    return Unexpected(
        bad_input("no " + std::string(kernel_language_name(l)) + " compiler for this device",
                  request.source_path.string()));
  return it->second;
}

Expected<std::string> LanguageCompiler::toolkit() {
  std::string out;
  bool first = true;
  for (auto& [language, compiler] : m_compilers) {
    auto t = compiler->toolkit();
    if (!t && first) return Unexpected(t.error());
    first = false;
    if (t) out += (out.empty() ? "" : " + ") + *t;
  }
  return out;
}

Expected<std::string> LanguageCompiler::toolkit_for(const CompileRequest& request) {
  auto c = compiler_for(request);
  if (!c) return Unexpected(c.error());
  return (*c)->toolkit_for(request);
}

Expected<Build> LanguageCompiler::compile(const CompileRequest& request,
                                          const std::filesystem::path& module_path) {
  auto c = compiler_for(request);
  if (!c) return Unexpected(c.error());
  return (*c)->compile(request, module_path);
}

bool LanguageCompiler::concurrent() const {
  return std::all_of(m_compilers.begin(), m_compilers.end(),
                     [](const auto& c) { return c.second->concurrent(); });
}

}  // namespace kopt
