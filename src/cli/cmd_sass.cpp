// `kopt sass PROBLEM`: machine-code facts and method signatures (no GPU needed).
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/sass_report.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::cli {
using evaluate::run_sass;
using evaluate::SassContext;
using evaluate::SassReport;
using evaluate::SassRequest;
namespace {

// The device's architecture when there is one (asked of a worker), else sm_90.
std::string default_arch(int device) {
  if (!cuda::probe_driver()) return "sm_90";
  TempDir tmp("kopt-worker");
  WorkerClient worker(worker_options(device, tmp.path()));
  auto info = worker.device_info();
  return info ? info->arch() : "sm_90";
}

void print_sass(const SassReport& r) {
  std::cout << fmt::format("kopt sass {} · {}\n", r.problem, r.arch);
  for (const auto& k : r.kernels) {
    std::cout << fmt::format("\n{} [{}]  {}\n", k.kernel, point_to_string(k.point),
                             k.build.lowered_entry);
    if (!k.error.empty()) std::cout << "  " << k.error << "\n";
    if (k.facts) {
      const SassFacts& f = *k.facts;
      std::cout << fmt::format("  {} instructions, {} registers, {} B local frame  ({})\n",
                               f.instructions, k.build.resources.registers,
                               k.build.resources.local_bytes, k.disassembler);
      std::string classes;
      for (const auto& [c, n] : f.classes)
        classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", c, n);
      std::cout << "  " << classes << "\n";
      auto widths = [](const std::map<int, std::size_t>& m) {
        std::string s;
        for (const auto& [w, n] : m) s += fmt::format("{}{}-bit x{}", s.empty() ? "" : " ", w, n);
        return s.empty() ? std::string("none") : s;
      };
      std::cout << fmt::format(
          "  global loads {} ({:.0f}% 128-bit); global stores {}; shared loads {}; shared stores "
          "{}\n",
          widths(f.global_loads_by_width), 100 * f.share_128bit_global_loads,
          widths(f.global_stores_by_width), widths(f.shared_loads_by_width),
          widths(f.shared_stores_by_width));
    }
    for (const auto& v : k.verdicts) {
      std::string ev;
      for (const auto& e : v.evidence)
        ev += fmt::format("{}{} {}x{}", ev.empty() ? "" : ", ", e.rule, e.pattern, e.count);
      std::cout << fmt::format("  {:<26} {:<15} {}{}\n", v.method, sass_verdict_name(v.verdict),
                               v.form.empty() ? "" : "(" + v.form + ") ",
                               v.reason.empty() ? ev : v.reason);
    }
  }
  if (!r.diff.empty()) {
    std::cout << "\nchanged from the first point to the second:\n";
    for (const auto& d : r.diff)
      std::cout << fmt::format("  {:<12} {:>5} -> {:<5}{}\n", d.key, d.before, d.after,
                               d.before == 0  ? "  appeared"
                               : d.after == 0 ? "  disappeared"
                                              : "");
  }
}

struct SassCliOptions {
  ProblemSelection sel;
  std::vector<std::string> methods;
  std::optional<std::string> catalog;
};

int run_sass_command(const GlobalOptions& g, SassCliOptions& o) {
  if (device_family() != DeviceFamily::cuda)
    return report_error(g, "sass", 3,
                        "SASS is NVIDIA machine code, and OpenCL builds are the driver's own: kopt "
                        "sass needs a CUDA device (--backend cuda)");
  auto sel = load_selection(o.sel);
  if (!sel) return report_error(g, "sass", exit_code(sel.error().kind), sel.error().to_string());
  Expected<MethodCatalog> catalog = builtin_method_catalog();
  if (o.catalog) {
    auto text = read_text_file(*o.catalog);
    if (!text) return report_error(g, "sass", 2, text.error().to_string());
    catalog = parse_method_catalog(*text, *o.catalog);
  }
  if (!catalog)
    return report_error(g, "sass", exit_code(catalog.error().kind), catalog.error().to_string());
  SassRequest req;
  req.kernels = o.sel.kernels;
  req.sets = sel->sets;
  if (!o.sel.vs.empty()) req.vs = sel->vs;
  req.methods = o.methods;
  req.arch = o.sel.arch ? *o.sel.arch : default_arch(o.sel.device);
  req.cache_root = cache_dir();
  TempDir tmp("kopt-worker");
  WorkerClient worker(
      worker_options(o.sel.device, tmp.path()));  // started only if a build needs it
  auto compiler = evaluate::make_compiler(device_family(), worker);
  SystemCommandRunner runner;
  auto report = run_sass(sel->problem, req, SassContext{*compiler, runner, *catalog});
  if (!report)
    return report_error(g, "sass", exit_code(report.error().kind), report.error().to_string());
  if (g.json)
    std::cout << to_json(*report).dump(2) << "\n";
  else
    print_sass(*report);
  return report->exit_code();
}

}  // namespace

std::vector<Command> sass_commands(const GlobalRef& g) {
  auto o = std::make_shared<SassCliOptions>();
  Command c{.path = {"sass"},
            .help = "machine-code facts and method signatures of kernels",
            .run = [g, o] { return run_sass_command(*g, *o); },
            .storage = o};
  add_selection(c, o->sel, "diff against the same point changed by NAME=VALUE (repeatable)");
  c.options.push_back({.names = "--method",
                       .help = "check this method's signature (repeatable; default: all)",
                       .target = &o->methods});
  c.options.push_back({.names = "--catalog",
                       .help = "a method catalog instead of the built-in one",
                       .target = &o->catalog});
  return {c};
}

}  // namespace kopt::cli
