#include "kopt/analysis/sass_precision.hpp"

#include <algorithm>
#include <map>

namespace kopt {

std::optional<Precision> mma_operand_precision(const SassInstruction& i) {
  if (i.never_runs()) return std::nullopt;
  std::string op = i.opcode;
  if (op.rfind("UTC", 0) == 0) op = op.substr(3);  // Blackwell's tcgen05 forms: UTCHMMA, ...
  auto has = [&](const char* m) { return i.has_modifier(m); };
  bool fp8 = has("E4M3") || has("E5M2") || has("E2M1") || has("E3M2") || has("E2M3");
  if (op == "DMMA") return Precision::f64;
  if (op == "IMMA" || op == "IGMMA" || op == "BMMA" || op == "BGMMA") return Precision::int8;
  if (op == "QMMA" || op == "QGMMA" || op == "OMMA") return Precision::fp8;
  if (op == "HMMA" || op == "HGMMA") {
    if (fp8) return Precision::fp8;
    if (has("TF32")) return Precision::tf32;
    if (has("BF16")) return Precision::bf16;
    return Precision::f16;  // HMMA.16816.F32 and HMMA.16816.F16: f16 operands
  }
  return std::nullopt;
}

std::string PrecisionFinding::explain() const {
  if (!lowest) return "no matrix instruction: its precision is that of its arithmetic";
  std::string where;
  int shown = 0;
  for (const auto& f : forms) {
    if (precision_at_least(f.operands, allowed)) continue;
    if (shown++ == 3) {
      where += ", ...";
      break;
    }
    where +=
        (where.empty() ? "" : ", ") + f.form + " x" + std::to_string(f.count) + " in " + f.function;
  }
  if (!below())
    return "multiplies in " + std::string(precision_name(*lowest)) + ", which " + allowed_from +
           " allows (" + std::string(precision_name(allowed)) + ")";
  return "its machine code multiplies in " + std::string(precision_name(*lowest)) + " (" + where +
         ") where the problem asks for " + std::string(precision_name(allowed)) + " (" +
         allowed_from + ")" +
         ": a lower-precision result, however close it comes under the tolerance. If " +
         std::string(precision_name(*lowest)) +
         " is acceptable here, say so in kopt.toml: " + "precision = \"" +
         std::string(precision_name(*lowest)) +
         "\" (the problem's, or in this kernel's [[kernels]] entry)";
}

std::vector<MmaForm> mma_forms(const std::vector<SassFunction>& functions) {
  std::map<std::pair<std::string, std::string>, MmaForm> forms;
  for (const auto& fn : functions)
    for (const auto& i : fn.instructions) {
      auto p = mma_operand_precision(i);
      if (!p) continue;
      std::string form = i.opcode;
      for (const auto& m : i.modifiers) form += "." + m;
      auto& entry = forms[{fn.name, form}];
      entry.function = fn.name;
      entry.form = form;
      entry.operands = *p;
      ++entry.count;
    }
  std::vector<MmaForm> out;
  for (auto& [key, form] : forms) out.push_back(form);
  return out;
}

PrecisionFinding judge_precision(std::vector<MmaForm> forms, const AllowedPrecision& allowed) {
  PrecisionFinding f;
  f.allowed = allowed.precision;
  f.allowed_from = allowed.from;
  f.declared = allowed.declared;
  std::stable_sort(forms.begin(), forms.end(), [](const MmaForm& a, const MmaForm& b) {
    return !precision_at_least(a.operands, b.operands);
  });
  if (!forms.empty()) f.lowest = forms.front().operands;
  f.forms = std::move(forms);
  return f;
}

nlohmann::json forms_to_json(const std::vector<MmaForm>& forms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : forms)
    out.push_back({{"function", m.function},
                   {"form", m.form},
                   {"operands", precision_name(m.operands)},
                   {"count", m.count}});
  return out;
}

std::optional<std::vector<MmaForm>> forms_from_json(const nlohmann::json& j) {
  try {
    std::vector<MmaForm> forms;
    for (const auto& e : j) {
      auto p = parse_precision(e.at("operands").get<std::string>());
      if (!p) return std::nullopt;
      forms.push_back({e.at("function").get<std::string>(), e.at("form").get<std::string>(), *p,
                       e.at("count").get<std::size_t>()});
    }
    return forms;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

nlohmann::json to_json(const PrecisionFinding& f) {
  return {{"allowed", precision_name(f.allowed)},
          {"allowed_from", f.allowed_from},
          {"lowest", f.lowest ? nlohmann::json(precision_name(*f.lowest)) : nlohmann::json()},
          {"below", f.below()},
          {"mma", forms_to_json(f.forms)}};
}

}  // namespace kopt
