// `kopt specs [GPU]` (the cited spec table) and `kopt target PROBLEM` (target.md).
#include <iostream>

#include "commands.hpp"
#include "kopt/analysis/target.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/ceilings_store.hpp"
#include "kopt/evaluate/roofs.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/target_markdown.hpp"

namespace kopt::cli {
using evaluate::find_ceilings_by_name;
using evaluate::resolve_roofs;
using evaluate::StoredCeilings;
using evaluate::worker_ceilings;
namespace {
using nlohmann::json;

json spec_json(const GpuSpec& s) {
  json values = json::object();
  for (const auto& f : spec_fields()) {
    const SpecValue* v = s.find(f.name);
    if (!v) {
      values[f.name] = {{"value", nullptr}, {"status", "UNKNOWN"}, {"unit", f.unit}};
      continue;
    }
    values[f.name] = {{"value", v->value ? json(*v->value) : json(nullptr)},
                      {"status", v->unsupported ? "unsupported" : "known"},
                      {"unit", f.unit},
                      {"source", s.source(v->source) ? s.source(v->source)->title : v->source},
                      {"section", v->section},
                      {"note", v->note}};
  }
  return {{"id", s.id},     {"name", s.name},   {"vendor", s.vendor},
          {"arch", s.arch}, {"match", s.match}, {"values", values}};
}

std::string known_ids() {
  std::string ids;
  for (const auto& s : builtin_gpu_specs()) ids += (ids.empty() ? "" : ", ") + s.id;
  return ids;
}

struct SpecsCliOptions {
  std::optional<std::string> gpu;
};

struct TargetCliOptions {
  ProblemSelection sel;
  std::optional<std::string> gpu;
  std::optional<std::string> precision;
  std::string out = "target.md";
};

int run_specs_command(const GlobalOptions& g, const SpecsCliOptions& o) {
  if (o.gpu) {
    const GpuSpec* s = find_gpu_spec(*o.gpu);
    if (!s)
      return report_error(g, "specs", 2,
                          "no GPU '" + *o.gpu + "' in the spec table (known: " + known_ids() + ")");
    if (g.json)
      std::cout << json{{"schema_version", 1}, {"command", "specs"}, {"gpu", spec_json(*s)}}.dump(2)
                << "\n";
    else
      std::cout << spec_markdown(*s);
    return 0;
  }
  if (g.json) {
    json all = json::array();
    for (const auto& s : builtin_gpu_specs()) all.push_back(spec_json(s));
    std::cout << json{{"schema_version", 1}, {"command", "specs"}, {"gpus", all}}.dump(2) << "\n";
  } else {
    std::cout << spec_table_markdown(builtin_gpu_specs());
  }
  return 0;
}

int run_target_command(const GlobalOptions& g, TargetCliOptions& o) {
  auto sel = load_selection(o.sel);
  if (!sel) return report_error(g, "target", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;
  const GpuSpec* spec = nullptr;
  std::string device_name;
  std::optional<StoredCeilings> ceilings;
  if (o.gpu) {
    spec = find_gpu_spec(*o.gpu);
    if (!spec)
      return report_error(
          g, "target", 2,
          "--gpu " + *o.gpu + ": not in the spec table (known: " + known_ids() + ")");
    device_name = spec->name;
    ceilings = find_ceilings_by_name(cache_dir(), device_name);
  } else {
    if (auto probe = cuda::probe_driver(); !probe)
      return report_error(g, "target", 3,
                          "no GPU here (" + probe.error().message + "): name one with --gpu ID");
    TempDir tmp("kopt-worker");
    WorkerClient worker(worker_options(o.sel.device, tmp.path()));
    auto device = worker.device_info();
    if (!device)
      return report_error(g, "target", 3,
                          device.error().message + ": name a GPU of the spec table with --gpu ID");
    device_name = device->name;
    spec = find_gpu_spec(device_name);
    // The roofs kopt optimize uses for its target (roofs.hpp): stored, else measured now.
    ceilings = resolve_roofs(cache_dir(), *device, worker_ceilings(worker)).ceilings;
  }
  std::string precision = o.precision.value_or(default_precision(problem));
  auto t = compute_target(problem, precision, spec, device_name,
                          ceilings ? &ceilings->result.ceilings : nullptr,
                          ceilings ? ceilings->measured_at : "");
  if (!t) return report_error(g, "target", exit_code(t.error().kind), t.error().to_string());
  std::string md = target_markdown(*t);
  if (auto w = write_text_atomic(o.out, md); !w)
    return report_error(g, "target", 4, w.error().to_string());
  if (g.json)
    std::cout << to_json(*t).dump(2) << "\n";
  else
    std::cout << md << "\nwritten: " << o.out << "\n";
  return 0;
}

}  // namespace

std::vector<Command> specs_commands(const GlobalRef& g) {
  auto s = std::make_shared<SpecsCliOptions>();
  Command specs{.path = {"specs"},
                .help = "the hardware spec table, with a source for every value",
                .run = [g, s] { return run_specs_command(*g, *s); },
                .storage = s};
  specs.options = {{.names = "gpu",
                    .help = "an id (h100-sxm) or a device name (\"NVIDIA H100 80GB HBM3\")",
                    .target = &s->gpu}};
  auto o = std::make_shared<TargetCliOptions>();
  Command target{.path = {"target"},
                 .help = "write target.md: roofs with sources, bound, stop conditions",
                 .run = [g, o] { return run_target_command(*g, *o); },
                 .storage = o};
  add_selection(target, o->sel);
  target.options.insert(
      target.options.end(),
      {{.names = "--gpu",
        .help = "a GPU of the spec table (default: this machine's)",
        .target = &o->gpu},
       {.names = "--precision",
        .help = "compute roof: fp32, fp64, fp16, bf16, tf32, fp8, int8",
        .target = &o->precision,
        .choices = {"fp32", "fp64", "fp16", "bf16", "tf32", "fp8", "int8"}},
       {.names = "--out", .help = "where to write target.md", .target = &o->out}});
  return {specs, target};
}

}  // namespace kopt::cli
