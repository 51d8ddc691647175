#include "kopt/backend/run_job.hpp"

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
  return {{"elements", s.elements}, {"nan", s.nan}, {"inf", s.inf},
          {"min", s.min},           {"max", s.max}, {"checksum", s.checksum}};
}

OutputSummary output_summary_from_json(const nlohmann::json& j) {
  OutputSummary s;
  s.elements = j.value("elements", std::uint64_t{0});
  s.nan = j.value("nan", std::uint64_t{0});
  s.inf = j.value("inf", std::uint64_t{0});
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  s.checksum = j.value("checksum", std::string{});
  return s;
}

}  // namespace kopt
