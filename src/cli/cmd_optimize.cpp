// `kopt optimize PROBLEM` (the whole loop) and `kopt iter mask|unmask RUN`.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/gpu_lab.hpp"
#include "kopt/engine/optimizer.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/tools/tool_probe.hpp"

namespace kopt::cli {
namespace {

void print_run(const RunState& s, const std::filesystem::path& dir) {
  std::cout << fmt::format("kopt optimize {} · {} · {} iterations · {}\n\n", s.problem, s.device, s.iteration,
                           s.stop_reason.empty() ? s.status : "stopped: " + s.stop_reason);
  double base = s.versions.empty() ? 0 : s.versions[0].median_s;
  std::cout << fmt::format("{:<4} {:<9} {:>10} {:>8}  {:<40} {}\n", "", "outcome", "time", "speedup", "variant", "methods");
  for (const auto& v : s.versions) {
    std::string methods;
    for (const auto& m : v.methods) {
      auto o = v.method_outcomes.find(m);
      methods += (methods.empty() ? "" : ", ") + m + (o == v.method_outcomes.end() ? "" : " (" + o->second + ")");
    }
    std::cout << fmt::format("v{:<3} {:<9} {:>10} {:>8}  {:<40} {}{}\n", v.index, v.outcome + (v.masked ? "*" : ""),
                             v.median_s > 0 ? human_time(v.median_s) : "-",
                             v.median_s > 0 && base > 0 ? fmt::format("{:.2f}x", base / v.median_s) : "-",
                             v.kernel + (v.point.empty() ? "" : " " + point_to_string(v.point)), methods,
                             v.note.empty() ? "" : "  [" + v.note + "]");
  }
  if (const VersionRecord* c = s.champion())
    std::cout << fmt::format("\nchampion: v{} {} at {}\n", c->index, c->kernel, human_time(c->median_s));
  std::cout << "run directory: " << dir.string() << " (run.json, v*/hypothesis.md, profiles, branches, ablations)\n";
}

}  // namespace

int run_optimize_command(const GlobalOptions& g, const OptimizeCliOptions& o) {
  auto sel = load_selection(o.sel);
  if (!sel) return report_error(g, "optimize", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;
  auto catalog = builtin_method_catalog();
  if (!catalog) return report_error(g, "optimize", 4, catalog.error().to_string());
  if (auto probe = cuda::probe_driver(); !probe)
    return report_error(g, "optimize", 3, "no GPU here: " + probe.error().message);
  OptimizeOptions opt;
  opt.iterations = o.iterations;
  opt.branches = o.branches;
  opt.patience = o.patience;
  opt.seed = o.seed;
  opt.start_kernel = o.start_kernel;
  opt.resume = o.resume;
  opt.run_dir = std::filesystem::absolute(o.run.empty() ? std::filesystem::path("kopt-runs") / problem.name
                                                         : std::filesystem::path(o.run));
  if (!g.json || g.verbose) opt.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };

  SystemCommandRunner runner;
  GpuLabOptions lo;
  lo.bench.rule.max_time_s = o.max_time_s;
  lo.bench.rule.min_time_s = std::min(0.2, o.max_time_s);
  lo.bench.rule.max_noise = 0.01;
  lo.compare_max_time_s = std::max(2.0, 2 * o.max_time_s);
  lo.arch = o.sel.arch;
  lo.device = o.sel.device;
  lo.cache_root = cache_dir();
  lo.kopt_executable = self_executable();
  ToolInfo ncu = probe_tool(runner, "ncu");
  if (ncu.found) {
    lo.ncu = ncu.path;
    lo.ncu_version = ncu.version;
  }
  TempDir tmp("kopt-worker");
  WorkerClient worker(worker_options(o.sel.device, tmp.path()));
  cuda::NvrtcCompiler compiler;
  auto lab = make_gpu_lab(problem, *catalog, lo, CheckContext{compiler, runner, worker});
  GitRepo git(runner, opt.run_dir);
  auto state = run_optimize(problem, *catalog, opt, *lab, &git);
  if (!state) return report_error(g, "optimize", exit_code(state.error().kind), state.error().to_string());
  if (g.json) std::cout << to_json(*state).dump(2) << "\n";
  else print_run(*state, opt.run_dir);
  return state->champion() ? 0 : 1;
}

int run_iter_mask_command(const GlobalOptions& g, const IterMaskCliOptions& o) {
  const char* cmd = o.mask ? "iter mask" : "iter unmask";
  auto s = load_run_state(o.run);
  if (!s) return report_error(g, cmd, exit_code(s.error().kind), s.error().to_string());
  if (auto r = set_masked(*s, o.versions, o.mask, o.reason); !r)
    return report_error(g, cmd, 2, r.error().to_string());
  if (auto w = save_run_state(o.run, *s); !w) return report_error(g, cmd, 4, w.error().to_string());
  const VersionRecord* c = s->champion();
  if (g.json) {
    std::cout << nlohmann::json{{"schema_version", 1}, {"command", cmd}, {"versions", o.versions},
                                {"champion", c ? c->index : -1}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{} v{}; the champion is now {}\n", o.mask ? "masked" : "unmasked", fmt::join(o.versions, ", v"),
                             c ? "v" + std::to_string(c->index) : "none");
  }
  return 0;
}

}  // namespace kopt::cli
