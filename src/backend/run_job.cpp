#include "kopt/backend/run_job.hpp"

#include <cmath>
#include <limits>

namespace kopt {

namespace {
constexpr RunStatus k_statuses[] = {
    RunStatus::ok,      RunStatus::load_failed, RunStatus::launch_failed,   RunStatus::fault,
    RunStatus::timeout, RunStatus::crash,       RunStatus::reference_failed};
}  // namespace

std::string_view run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::ok:
      return "ok";
    case RunStatus::load_failed:
      return "load_failed";
    case RunStatus::launch_failed:
      return "launch_failed";
    case RunStatus::fault:
      return "fault";
    case RunStatus::timeout:
      return "timeout";
    case RunStatus::crash:
      return "crash";
    case RunStatus::reference_failed:
      return "reference_failed";
  }
  return "?";
}

std::optional<RunStatus> parse_run_status(std::string_view name) {
  for (RunStatus s : k_statuses)
    if (run_status_name(s) == name) return s;
  return std::nullopt;
}

std::string_view module_kind_name(ModuleKind k) {
  switch (k) {
    case ModuleKind::cubin:
      return "cubin";
    case ModuleKind::cpu_library:
      return "cpu_library";
    case ModuleKind::solve_library:
      return "solve_library";
    case ModuleKind::python_reference:
      return "python_reference";
    case ModuleKind::triton:
      return "triton";
    case ModuleKind::torch_eager:
      return "torch_eager";
    case ModuleKind::torch_compile:
      return "torch_compile";
  }
  return "?";
}

std::optional<ModuleKind> parse_module_kind(std::string_view name) {
  for (ModuleKind k : {ModuleKind::cubin, ModuleKind::cpu_library, ModuleKind::solve_library,
                       ModuleKind::python_reference, ModuleKind::triton, ModuleKind::torch_eager,
                       ModuleKind::torch_compile})
    if (module_kind_name(k) == name) return k;
  return std::nullopt;
}

nlohmann::json to_json(const OutputSummary& s) {
  return {{"elements", s.elements}, {"nan", s.nan}, {"inf", s.inf},          {"min", s.min},
          {"max", s.max},           {"rms", s.rms}, {"checksum", s.checksum}};
}

OutputSummary output_summary_from_json(const nlohmann::json& j) {
  OutputSummary s;
  s.elements = j.value("elements", std::uint64_t{0});
  s.nan = j.value("nan", std::uint64_t{0});
  s.inf = j.value("inf", std::uint64_t{0});
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  s.checksum = j.value("checksum", std::string{});
  s.rms = j.value("rms", 0.0);
  return s;
}

nlohmann::json json_number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

double json_double(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v == "Infinity") return std::numeric_limits<double>::infinity();
  if (v == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

nlohmann::json to_json(const DeviceComparison& c) {
  nlohmann::json first = nlohmann::json::array();
  for (const auto& m : c.first)
    first.push_back({m.flat, json_number(m.got), json_number(m.expected)});
  return {{"numel", c.numel},
          {"mismatches", c.mismatches},
          {"nan", c.nan},
          {"inf", c.inf},
          {"unwritten", c.unwritten},
          {"max_abs_err", json_number(c.max_abs_err)},
          {"max_rel_err", json_number(c.max_rel_err)},
          {"rel_l2_err", json_number(c.rel_l2_err)},
          {"first", first},
          {"exact_rel_l2", json_number(c.exact_rel_l2)}};
}

namespace {
double double_at(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? json_double(j.at(key)) : 0.0;
}
}  // namespace

DeviceComparison device_comparison_from_json(const nlohmann::json& j) {
  DeviceComparison c;
  c.numel = j.value("numel", std::uint64_t{0});
  c.mismatches = j.value("mismatches", std::uint64_t{0});
  c.nan = j.value("nan", std::uint64_t{0});
  c.inf = j.value("inf", std::uint64_t{0});
  c.unwritten = j.value("unwritten", std::uint64_t{0});
  c.max_abs_err = double_at(j, "max_abs_err");
  c.max_rel_err = double_at(j, "max_rel_err");
  c.rel_l2_err = double_at(j, "rel_l2_err");
  c.exact_rel_l2 = j.contains("exact_rel_l2") ? double_at(j, "exact_rel_l2") : -1.0;
  if (j.contains("first"))
    for (const auto& m : j.at("first"))
      if (m.is_array() && m.size() == 3)
        c.first.push_back({m[0].get<std::uint64_t>(), json_double(m[1]), json_double(m[2])});
  return c;
}

nlohmann::json to_json(const OutputSource& s) {
  return {{"key", s.key}, {"path", s.path.string()}};
}

OutputSource output_source_from_json(const nlohmann::json& j) {
  return {j.value("key", std::string{}), j.value("path", std::string{})};
}

}  // namespace kopt
