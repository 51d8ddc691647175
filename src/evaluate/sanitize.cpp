#include "kopt/evaluate/sanitize.hpp"

#include <fmt/format.h>

#include "kopt/core/fs.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<SanitizerOutcome> all_unverifiable(const std::vector<std::string>& tools,
                                               const std::string& why) {
  std::vector<SanitizerOutcome> out;
  for (const auto& t : tools) {
    SanitizerOutcome o;
    o.tool = t;
    o.reason = why;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

std::vector<SanitizerOutcome> sanitize_kernel(const Problem& p, const KernelCheck& kc, bool opencl,
                                              const SanitizeRequest& r, CommandRunner& runner) {
  if (opencl)
    return all_unverifiable(r.tools,
                            "compute-sanitizer checks CUDA kernels; this one ran through OpenCL");
  if (is_python(kc.build.module_kind))
    return all_unverifiable(
        r.tools,
        "a Triton kernel runs inside Python: kopt does not run it under compute-sanitizer");
  if (!kc.build.ok) return all_unverifiable(r.tools, "the kernel did not build");
  if (!r.sanitizer) return all_unverifiable(r.tools, r.missing_reason);
  TempDir tmp("kopt-sanitize");
  auto inputs = write_seed_inputs(p, 1, tmp.path(), InputFiles::now);
  if (!inputs)
    return all_unverifiable(r.tools, "its inputs could not be written: " + inputs.error().message);
  RunJob job = kernel_job(p.name + "/" + kc.kernel + " " + point_to_string(kc.point), kc.build,
                          kc.launch, job_tensors(p, *inputs, tmp.path()));
  fs::path job_file = tmp.path() / "job.json";
  if (auto w = write_text_atomic(job_file, to_json(job).dump()); !w)
    return all_unverifiable(r.tools, w.error().message);
  std::vector<SanitizerOutcome> out;
  for (const auto& tool : r.tools) {
    SanitizerRequest sr;
    sr.sanitizer = *r.sanitizer;
    sr.tool = tool;
    sr.program = {
        r.kopt_executable.string(), "worker",   "--device", std::to_string(r.device), "--once",
        job_file.string(),          "--repeat", "1"};
    r.log(fmt::format("{} {} under compute-sanitizer --tool {}", kc.kernel,
                      point_to_string(kc.point), tool));
    CommandResult run = runner.run(
        sanitizer_argv(sr), std::chrono::milliseconds(static_cast<long>(r.timeout_s * 1000)));
    out.push_back(parse_sanitizer_output(tool, run));
  }
  return out;
}

std::optional<SanitizerStatus> sanitizer_verdict(const std::vector<SanitizerOutcome>& outcomes) {
  if (outcomes.empty()) return std::nullopt;
  bool unverifiable = false;
  for (const auto& o : outcomes) {
    if (o.status == SanitizerStatus::findings) return SanitizerStatus::findings;
    unverifiable = unverifiable || o.status == SanitizerStatus::unverifiable;
  }
  return unverifiable ? SanitizerStatus::unverifiable : SanitizerStatus::clean;
}

std::string sanitizer_summary(const std::vector<SanitizerOutcome>& outcomes) {
  std::string s;
  for (const auto& o : outcomes) {
    std::string part = o.tool + ": ";
    if (o.status == SanitizerStatus::clean)
      part += o.findings.empty() ? "clean" : fmt::format("clean ({} warnings)", o.findings.size());
    else if (o.status == SanitizerStatus::unverifiable)
      part += "unverifiable (" + o.reason + ")";
    else {
      const auto& f = o.findings.front();
      part += f.kind + (f.location.empty() ? "" : " at " + f.location) +
              (f.count > 1 ? fmt::format(" ({}x)", f.count) : "");
      if (o.findings.size() > 1) part += fmt::format(" and {} more", o.findings.size() - 1);
    }
    s += (s.empty() ? "" : "; ") + part;
  }
  return s;
}

json to_json(const SanitizerFinding& f) {
  return {{"tool", f.tool},         {"kind", f.kind},     {"kernel", f.kernel},
          {"location", f.location}, {"detail", f.detail}, {"count", f.count}};
}

json to_json(const SanitizerOutcome& o) {
  json findings = json::array();
  for (const auto& f : o.findings) findings.push_back(to_json(f));
  return {{"tool", o.tool},
          {"status", o.status},
          {"reason", o.reason},
          {"findings", findings},
          {"output", o.output}};
}

SanitizeRequest sanitize_request(CommandRunner& runner, std::vector<std::string> tools,
                                 int device) {
  SanitizeRequest r;
  r.tools = std::move(tools);
  r.device = device;
  r.kopt_executable = self_executable();
  ToolInfo t = probe_tool(runner, "compute-sanitizer");
  if (t.found)
    r.sanitizer = t.path;
  else
    r.missing_reason =
        "compute-sanitizer not found on PATH or in the CUDA toolkit's bin (it ships with the "
        "toolkit)";
  return r;
}

}  // namespace kopt::evaluate
