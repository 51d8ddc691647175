#include "kopt/backend/build.hpp"

#include <regex>
#include <sstream>

namespace kopt {
using nlohmann::json;

ResourceUsage parse_ptxas_info(const std::string& log, const std::string& lowered_entry) {
  // ptxas prints, per function:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  //   ptxas info    : Function properties for NAME
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 16 registers, used 0 barriers, 256 bytes smem, 368 bytes cmem[0]
  ResourceUsage r;
  std::istringstream in(log);
  std::string line;
  bool in_entry = false;
  static const std::regex compiling(R"(Compiling entry function '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[0\])");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, compiling)) {
      in_entry = m[1] == lowered_entry;
      continue;
    }
    if (std::regex_search(line, m, properties)) {
      in_entry = m[1] == lowered_entry;
      continue;
    }
    if (!in_entry) continue;
    if (std::regex_search(line, m, frame)) {
      r.local_bytes = std::stoll(m[1]);
      r.spill_store_bytes = std::stoll(m[2]);
      r.spill_load_bytes = std::stoll(m[3]);
    }
    if (std::regex_search(line, m, regs)) {
      r.registers = std::stoi(m[1]);
      r.shared_static_bytes = std::regex_search(line, m, smem) ? std::stoll(m[1]) : 0;
      if (std::regex_search(line, m, cmem)) r.const_bytes = std::stoll(m[1]);
      r.source = "ptxas";
    }
  }
  return r;
}

Build refused_build(const CompileRequest& request) {
  Build b;
  b.ok = false;
  b.log = request.refused;
  b.arch = request.arch;
  return b;
}

json to_json(const Build& b) {
  return json{{"ok", b.ok},
              {"log", b.log},
              {"lowered_entry", b.lowered_entry},
              {"cubin_path", b.cubin_path.string()},
              {"key", b.key},
              {"arch", b.arch},
              {"toolkit", b.toolkit},
              {"resources", b.resources},
              {"from_cache", b.from_cache},
              {"compile_ms", b.compile_ms},
              {"module_kind", module_kind_name(b.module_kind)}};
}

json to_json(const CompileRequest& r) {
  json defines = json::array(), dirs = json::array();
  for (const auto& [k, v] : r.defines) defines.push_back({k, v});
  for (const auto& d : r.include_dirs) dirs.push_back(d.string());
  return json{{"source_path", r.source_path.string()},
              {"source_text", r.source_text},
              {"entry", r.entry},
              {"defines", defines},
              {"options", r.options},
              {"include_dirs", dirs},
              {"arch", r.arch},
              {"solve_abi", r.solve_abi},
              {"refused", r.refused}};
}

CompileRequest compile_request_from_json(const json& j) {
  CompileRequest r;
  r.source_path = j.at("source_path").get<std::string>();
  r.source_text = j.at("source_text").get<std::string>();
  r.entry = j.at("entry").get<std::string>();
  for (const auto& d : j.at("defines"))
    r.defines.emplace_back(d.at(0).get<std::string>(), d.at(1).get<std::string>());
  r.options = j.at("options").get<std::vector<std::string>>();
  for (const auto& d : j.at("include_dirs")) r.include_dirs.emplace_back(d.get<std::string>());
  r.arch = j.value("arch", r.arch);
  r.solve_abi = j.value("solve_abi", false);
  r.refused = j.value("refused", std::string{});
  return r;
}

Build build_from_json(const json& j) {
  Build b;
  b.ok = j.value("ok", false);
  b.log = j.value("log", std::string{});
  b.lowered_entry = j.value("lowered_entry", std::string{});
  b.cubin_path = j.value("cubin_path", std::string{});
  b.key = j.value("key", std::string{});
  b.arch = j.value("arch", std::string{});
  b.toolkit = j.value("toolkit", std::string{});
  if (j.contains("resources")) b.resources = j["resources"].get<ResourceUsage>();
  b.from_cache = j.value("from_cache", false);
  b.compile_ms = j.value("compile_ms", 0.0);
  b.module_kind =
      parse_module_kind(j.value("module_kind", std::string("cubin"))).value_or(ModuleKind::cubin);
  return b;
}

}  // namespace kopt
