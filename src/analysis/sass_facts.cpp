#include "kopt/analysis/sass_facts.hpp"

#include <set>

namespace kopt {

int access_width_bits(const SassInstruction& i) {
  for (const auto& m : i.modifiers) {
    if (m == "128") return 128;
    if (m == "64") return 64;
    if (m == "U8" || m == "S8") return 8;
    if (m == "U16" || m == "S16") return 16;
  }
  return 32;
}

std::string instruction_class(const SassInstruction& i) {
  static const std::map<std::string, std::string, std::less<>> k_classes = {
      {"LDG", "global_load"},   {"STG", "global_store"},  {"LD", "generic_load"},
      {"ST", "generic_store"},  {"LDS", "shared_load"},   {"STS", "shared_store"},
      {"LDSM", "ldmatrix"},     {"LDGSTS", "cp_async"},   {"LDGDEPBAR", "cp_async"},
      {"UTMALDG", "tma"},       {"UTMASTG", "tma"},       {"UTMAPF", "tma"},
      {"UBLKCP", "tma"},        {"UTMAREDG", "tma"},      {"HMMA", "tensor_core"},
      {"HGMMA", "tensor_core"}, {"IMMA", "tensor_core"},  {"QGMMA", "tensor_core"},
      {"IGMMA", "tensor_core"}, {"DMMA", "tensor_core"},  {"BMMA", "tensor_core"},
      {"FFMA", "fp32_fma"},     {"FADD", "fp32_add"},     {"FMUL", "fp32_mul"},
      {"HFMA2", "fp16_fma"},    {"DFMA", "fp64_fma"},     {"MUFU", "special_function"},
      {"SHFL", "shuffle"},      {"BAR", "barrier"},       {"ATOM", "atomic"},
      {"ATOMG", "atomic"},      {"ATOMS", "atomic"},      {"RED", "reduction"},
      {"REDG", "reduction"},    {"REDUX", "reduction"},   {"LDL", "local_load"},
      {"STL", "local_store"},   {"LDC", "constant_load"}, {"ULDC", "constant_load"}};
  auto it = k_classes.find(i.opcode);
  return it == k_classes.end() ? std::string() : it->second;
}

SassFacts sass_facts(const SassFunction& f) {
  SassFacts facts;
  facts.function = f.name;
  facts.instructions = f.instructions.size();
  for (const auto& i : f.instructions) {
    if (i.never_runs()) continue;  // counted in `instructions`, evidence of nothing
    ++facts.opcodes[i.opcode];
    std::string cls = instruction_class(i);
    if (!cls.empty()) ++facts.classes[cls];
    int w = access_width_bits(i);
    if (i.opcode == "LDG") ++facts.global_loads_by_width[w];
    if (i.opcode == "STG") ++facts.global_stores_by_width[w];
    if (i.opcode == "LDS") ++facts.shared_loads_by_width[w];
    if (i.opcode == "STS") ++facts.shared_stores_by_width[w];
  }
  auto count = [](const auto& m, const auto& key) -> std::size_t {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  if (std::size_t loads = count(facts.classes, "global_load"))
    facts.share_128bit_global_loads =
        double(count(facts.global_loads_by_width, 128)) / double(loads);
  return facts;
}

nlohmann::json to_json(const SassFacts& f) {
  auto widths = [](const std::map<int, std::size_t>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [w, n] : m) j[std::to_string(w)] = n;
    return j;
  };
  return {{"function", f.function},
          {"instructions", f.instructions},
          {"classes", f.classes},
          {"opcodes", f.opcodes},
          {"global_loads_by_width", widths(f.global_loads_by_width)},
          {"global_stores_by_width", widths(f.global_stores_by_width)},
          {"shared_loads_by_width", widths(f.shared_loads_by_width)},
          {"shared_stores_by_width", widths(f.shared_stores_by_width)},
          {"share_128bit_global_loads", f.share_128bit_global_loads}};
}

std::string diff_key(const SassInstruction& i) {
  static const std::set<std::string, std::less<>> k_sized = {"LDG", "STG", "LDS", "STS",
                                                             "LD",  "ST",  "LDL", "STL"};
  if (k_sized.count(i.opcode)) return i.opcode + "." + std::to_string(access_width_bits(i));
  return i.opcode;
}

std::vector<SassDiffEntry> sass_diff(const SassFunction& before, const SassFunction& after) {
  std::map<std::string, std::pair<std::size_t, std::size_t>> counts;
  for (const auto& i : before.instructions) ++counts[diff_key(i)].first;
  for (const auto& i : after.instructions) ++counts[diff_key(i)].second;
  std::vector<SassDiffEntry> out;
  for (const auto& [key, c] : counts)
    if (c.first != c.second) out.push_back({key, c.first, c.second});
  return out;
}

}  // namespace kopt
