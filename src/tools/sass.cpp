#include "kopt/tools/sass.hpp"

#include <cstdlib>
#include <regex>
#include <sstream>

#include "kopt/tools/tool_probe.hpp"

namespace kopt {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool SassInstruction::has_modifier(const std::string& m) const {
  for (const auto& x : modifiers)
    if (x == m) return true;
  return false;
}

std::vector<SassFunction> parse_sass(const std::string& text) {
  // nvdisasm: ".text.NAME:" starts a function; cuobjdump: "Function : NAME".
  static const std::regex nvdisasm_fn(R"(^\s*\.text\.(\S+):\s*$)");
  static const std::regex cuobjdump_fn(R"(^\s*Function\s*:\s*(\S+)\s*$)");
  // "/*0220*/   @!P0 LDG.E.128.CONSTANT R4, desc[UR8][R4.64] ;   /* 0x... */"
  static const std::regex insn(
      R"(^\s*/\*([0-9a-fA-F]+)\*/\s+(?:\{\s*)?(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\s*([^;]*);)");
  std::vector<SassFunction> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, nvdisasm_fn) || std::regex_match(line, m, cuobjdump_fn)) {
      out.push_back(SassFunction{m[1], {}});
      continue;
    }
    if (out.empty() || !std::regex_search(line, m, insn)) continue;
    SassInstruction i;
    i.address = static_cast<std::uint32_t>(std::stoul(m[1], nullptr, 16));
    i.predicate = m[2];
    while (!i.predicate.empty() && i.predicate.back() == ' ') i.predicate.pop_back();
    i.opcode = m[3];
    std::string mods = m[4];
    std::size_t start = 1;
    while (start <= mods.size() && !mods.empty()) {
      std::size_t dot = mods.find('.', start);
      i.modifiers.push_back(
          mods.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    i.operands = m[5];
    while (!i.operands.empty() && i.operands.back() == ' ') i.operands.pop_back();
    out.back().instructions.push_back(std::move(i));
  }
  return out;
}

const SassFunction* find_function(const std::vector<SassFunction>& functions,
                                  const std::string& name) {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

SassFunction merge_functions(const std::vector<SassFunction>& functions) {
  SassFunction all;
  all.name =
      std::to_string(functions.size()) + (functions.size() == 1 ? " kernel: " : " kernels: ");
  for (std::size_t i = 0; i < functions.size(); ++i) {
    all.name += (i ? ", " : "") + functions[i].name;
    all.instructions.insert(all.instructions.end(), functions[i].instructions.begin(),
                            functions[i].instructions.end());
  }
  return all;
}

Expected<Disassembly> disassemble(CommandRunner& runner, const fs::path& cubin, bool host_library) {
  std::vector<std::pair<std::string, std::vector<std::string>>> tools;
  if (const char* v = std::getenv("KOPT_NVDISASM"); v && *v && !host_library)
    tools.push_back({v, {"-c"}});
  for (std::string name : {"nvdisasm", "cuobjdump"}) {
    if (host_library && name == "nvdisasm") continue;
    if (auto p = find_program(name, cuda_tool_dirs()))
      tools.push_back({p->string(), name == "nvdisasm" ? std::vector<std::string>{"-c"}
                                                       : std::vector<std::string>{"-sass"}});
  }
  std::string tried;
  for (const auto& [tool, args] : tools) {
    std::vector<std::string> argv = {tool};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(cubin.string());
    CommandResult r = runner.run(argv, 120s);
    if (r.ok()) return Disassembly{tool, r.out};
    tried += (tried.empty() ? "" : "; ") + tool + ": " +
             (r.started ? r.err.substr(0, 200) : "could not run");
  }
  if (tools.empty() && host_library)
    return Unexpected(environment_error(
        "no cuobjdump (the CUDA toolkit's): a solve() library's device code is read "
        "with cuobjdump -sass, which nvdisasm cannot do"));
  return Unexpected(environment_error(
      tools.empty() ? "no disassembler: install nvdisasm or cuobjdump (the CUDA toolkit, or pip's "
                      "nvidia-cuda-nvdisasm: scripts/bootstrap installs it) or set KOPT_NVDISASM"
                    : "the disassembler failed: " + tried));
}

}  // namespace kopt
