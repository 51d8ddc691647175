// `kopt optimize PROBLEM` (the whole loop) and `kopt iter mask|unmask RUN`.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/dispatcher.hpp"
#include "kopt/engine/gpu_lab.hpp"
#include "kopt/engine/optimizer.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "worker_pool.hpp"

namespace kopt::cli {
namespace {

void print_run(const RunState& s, const std::filesystem::path& dir) {
  std::cout << fmt::format("kopt optimize {} · {} · {} iterations · {}\n\n", s.problem, s.device,
                           s.iteration,
                           s.stop_reason.empty() ? s.status : "stopped: " + s.stop_reason);
  double base = s.versions.empty() ? 0 : s.versions[0].median_s;
  std::cout << fmt::format("{:<4} {:<9} {:>10} {:>8}  {:<40} {}\n", "", "outcome", "time",
                           "speedup", "variant", "methods");
  for (const auto& v : s.versions) {
    std::string methods;
    for (const auto& m : v.methods) {
      auto o = v.method_outcomes.find(m);
      methods += (methods.empty() ? "" : ", ") + m +
                 (o == v.method_outcomes.end() ? "" : " (" + o->second + ")");
    }
    std::cout << fmt::format(
        "v{:<3} {:<9} {:>10} {:>8}  {:<40} {}{}\n", v.index, v.outcome + (v.masked ? "*" : ""),
        v.median_s > 0 ? human_time(v.median_s) : "-",
        v.median_s > 0 && base > 0 ? fmt::format("{:.2f}x", base / v.median_s) : "-",
        v.kernel + (v.point.empty() ? "" : " " + point_to_string(v.point)), methods,
        v.note.empty() ? "" : "  [" + v.note + "]");
  }
  if (!s.versions.empty() && !s.versions.back().predictions.empty()) {
    std::cout << fmt::format("\npredictions of v{}:\n", s.versions.back().index);
    for (const auto& p : s.versions.back().predictions)
      std::cout << "  " << p.branch << " " << prediction_line(p) << "\n";
  }
  if (const VersionRecord* c = s.champion())
    std::cout << fmt::format("\nchampion: v{} {} at {}\n", c->index, c->kernel,
                             human_time(c->median_s));
  std::cout << "run directory: " << dir.string()
            << " (run.json, v*/hypothesis.md, profiles, branches, ablations)\n";
}

}  // namespace

namespace {

// What the loop needs: its workers (one, one per --gpus device, or one per device of a Ray
// cluster), NVRTC, ncu if installed, the lab and git.
struct LoopMachine {
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<Lab> lab;
  GitRepo git;
  LoopMachine(std::unique_ptr<WorkerPool> workers, const Problem& problem,
              const MethodCatalog& catalog, const ProblemSelection& sel, double max_time_s,
              const std::filesystem::path& run_dir, bool sanitize,
              const std::function<void(const std::string&)>& log)
      : pool(std::move(workers)), git(pool->runner(), run_dir) {
    GpuLabOptions lo;
    if (log) lo.log = log;  // a worker lost on the way is said there
    lo.bench.rule.max_time_s = max_time_s;
    lo.bench.rule.min_time_s = std::min(0.2, max_time_s);
    lo.bench.rule.max_noise = 0.01;
    lo.compare_max_time_s = std::max(2.0, 2 * max_time_s);
    lo.arch = sel.arch;
    lo.device = sel.device;
    lo.cache_root = cache_dir();
    lo.kopt_executable = self_executable();
    ToolInfo ncu = probe_tool(pool->runner(), "ncu");
    if (ncu.found) {
      lo.ncu = ncu.path;
      lo.ncu_version = ncu.version;
    }
    if (sanitize)
      lo.sanitize = sanitize_request(pool->runner(), {"memcheck", "racecheck"}, sel.device);
    lab = make_gpu_lab(problem, catalog, lo, pool->contexts());
  }
};

// report.md, benchmark.md and report.html beside run.json, from the records.
void write_run_reports(const std::filesystem::path& run_dir) {
  RunReport r = load_run_report(run_dir);
  (void)write_text_atomic(run_dir / "report.md", report_markdown(r));
  (void)write_text_atomic(run_dir / "benchmark.md", benchmark_markdown(r));
  (void)write_text_atomic(run_dir / "report.html", report_html(r));
}

// The experience DB at `path` (default: the user's); a DB that cannot be opened is said on
// stderr and the run goes on without experience.
std::optional<ExperienceDb> open_experience(const std::string& path) {
  auto db =
      ExperienceDb::open(path.empty() ? default_experience_db() : std::filesystem::path(path));
  if (db) return std::move(*db);
  std::cerr << "kopt: running without experience: " << db.error().to_string() << "\n";
  return std::nullopt;
}

std::function<void(const std::string&)> stderr_log() {
  return [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };
}

}  // namespace

int run_optimize_command(const GlobalOptions& g, const OptimizeCliOptions& o) {
  auto sel = load_selection(o.sel);
  if (!sel)
    return report_error(g, "optimize", exit_code(sel.error().kind), sel.error().to_string());
  // --kernel K: the loop starts from K and never leaves it (another kernel of the problem,
  // a library call such as cuBLAS, is not a step of K's optimization).
  if (!o.sel.kernels.empty()) {
    auto chosen = select_kernels(sel->problem, o.sel.kernels);
    if (!chosen) return report_error(g, "optimize", 2, chosen.error().to_string());
    std::vector<KernelSpec> kept;
    for (const KernelSpec* k : *chosen) kept.push_back(*k);
    sel->problem.kernels = std::move(kept);
  }
  const Problem& problem = sel->problem;
  auto catalog = builtin_method_catalog();
  if (!catalog) return report_error(g, "optimize", 4, catalog.error().to_string());
  if (auto present = backend_device_present(); !present)
    return report_error(g, "optimize", 3, "no device here: " + present.error().message);
  OptimizeOptions opt;
  opt.iterations = o.iterations;
  opt.branches = o.branches;
  opt.patience = o.patience;
  opt.seed = o.seed;
  opt.start_kernel = o.start_kernel;
  opt.resume = o.resume;
  opt.proposer = o.proposer;
  opt.proposer_timeout_s = o.proposer_timeout_s;
  opt.budget_formula = parse_budget_formula(o.budget_formula).value_or(BudgetFormula::headroom);
  opt.profile_branches = o.profile_branches;
  opt.run_dir =
      std::filesystem::absolute(o.run.empty() ? std::filesystem::path("kopt-runs") / problem.name
                                              : std::filesystem::path(o.run));
  if (!g.json || g.verbose) opt.log = stderr_log();
  auto pool = WorkerPool::open({o.gpus, o.cluster, o.sel.device, o.allow_mixed});
  if (!pool)
    return report_error(g, "optimize", exit_code(pool.error().kind), pool.error().to_string());
  if ((*pool)->size() > 1) {
    std::vector<std::string> notes;
    auto devices = worker_devices((*pool)->contexts(), o.allow_mixed, notes);
    if (!devices)
      return report_error(g, "optimize", exit_code(devices.error().kind),
                          devices.error().to_string());
    if (opt.log) {
      opt.log((*pool)->description() +
              "; branches are measured one per worker, comparisons on one device");
      for (std::size_t w = 0; w < devices->size(); ++w)
        opt.log("worker " + std::to_string(w) + ": " + device_label((*devices)[w]));
      for (const auto& n : notes) opt.log("note: " + n);
    }
  }
  LoopMachine m(std::move(*pool), problem, *catalog, o.sel, o.max_time_s, opt.run_dir, o.sanitize,
                opt.log);
  std::optional<ExperienceDb> experience;
  if (o.use_experience) experience = open_experience(o.experience_db);
  if (experience) opt.experience = &*experience;
  auto state = run_optimize(problem, *catalog, opt, *m.lab, &m.git);
  if (!state)
    return report_error(g, "optimize", exit_code(state.error().kind), state.error().to_string());
  write_run_reports(opt.run_dir);
  if (g.json)
    std::cout << to_json(*state).dump(2) << "\n";
  else
    print_run(*state, opt.run_dir);
  return state->champion() ? 0 : 1;
}

int run_iter_step_command(const GlobalOptions& g, const IterStepCliOptions& o) {
  std::string cmd = "iter " + o.step;
  std::filesystem::path run = std::filesystem::absolute(o.run);
  std::string problem_dir = o.problem;
  if (problem_dir.empty()) {
    auto s = load_run_state(run);
    if (!s)
      return report_error(
          g, cmd, 2,
          s.error().to_string() + (o.step == "open" ? " (a new run needs --problem DIR)" : ""));
    problem_dir = s->problem_dir;
  }
  ProblemSelection sel;
  sel.problem = problem_dir;
  sel.arch = o.arch;
  sel.device = o.device;
  auto loaded = load_selection(sel);
  if (!loaded)
    return report_error(g, cmd, exit_code(loaded.error().kind), loaded.error().to_string());
  const Problem& problem = loaded->problem;
  auto catalog = builtin_method_catalog();
  if (!catalog) return report_error(g, cmd, 4, catalog.error().to_string());
  OptimizeOptions opt;
  opt.run_dir = run;
  opt.resume = true;
  opt.iterations = 1000000;  // an agent decides when to stop (kopt iter finalize)
  opt.patience = 1000000;
  opt.budget_formula = parse_budget_formula(o.budget_formula).value_or(BudgetFormula::headroom);
  if (!g.json) opt.log = stderr_log();
  if ((o.step == "open" || o.step == "close") && !backend_device_present())
    return report_error(g, cmd, 3,
                        "no device here: kopt iter " + o.step + " measures and profiles");
  auto pool = WorkerPool::open({"", "", o.device, false});
  if (!pool) return report_error(g, cmd, exit_code(pool.error().kind), pool.error().to_string());
  LoopMachine m(std::move(*pool), problem, *catalog, sel, o.max_time_s, run, o.sanitize, opt.log);
  std::optional<ExperienceDb> experience;
  if (o.step == "open" || o.step == "close") experience = open_experience("");
  if (experience) opt.experience = &*experience;
  Expected<RunState> state = Unexpected(internal_error("unknown step " + o.step));
  if (o.step == "open") {
    state = iter_open(problem, *catalog, opt, *m.lab, &m.git);
  } else if (o.step == "branch") {
    auto sets = parse_assignments(o.sets, "--set");
    if (!sets) return report_error(g, cmd, 2, sets.error().to_string());
    BranchRecord b;
    b.kernel = o.kernel;
    b.point = ParamPoint(sets->begin(), sets->end());
    b.methods = o.methods;
    b.ablates = o.ablates;
    b.hypothesis = o.hypothesis;
    for (const auto& text : o.expect) {
      auto p = parse_prediction(text, "--expect");
      if (!p) return report_error(g, cmd, 2, p.error().to_string());
      b.expect.push_back(*p);
    }
    state = iter_branch(problem, *catalog, opt, *m.lab, b, o.file);
  } else if (o.step == "close") {
    state = iter_close(problem, *catalog, opt, *m.lab, &m.git);
  } else if (o.step == "finalize") {
    state = iter_finalize(problem, *catalog, opt, *m.lab, &m.git);
  }
  if (!state) return report_error(g, cmd, exit_code(state.error().kind), state.error().to_string());
  if (g.json) {
    std::cout << to_json(*state).dump(2) << "\n";
  } else if (o.step == "open" && state->open) {
    const OpenIteration& it = *state->open;
    std::cout << fmt::format("iteration {} is open in {}\nbudget: {}\n", it.index, run.string(),
                             it.budget);
    std::cout << "champion is " << it.draft.bottleneck << ": "
              << (it.draft.evidence.empty() ? "" : it.draft.evidence[0]) << "\n";
    if (it.advice.is_object())
      std::cout << "headroom: " << it.advice["headroom"].value("summary", "") << "\n";
    std::cout << (it.suggestions.empty() ? "nothing to suggest\n" : "what next, ranked:\n");
    for (const auto& s : it.suggestions) std::cout << "  " << s << "\n";
    std::cout << fmt::format(
        "read {}/v{}/hypothesis.md and the profile; add branches with kopt iter branch {} --file "
        "KERNEL.cu [--set P=V] [--method M] [--ablates M] [--hypothesis TEXT] [--expect "
        "METRIC:up|down[:AMOUNT]], "
        "then kopt iter close {}\n",
        run.string(), it.index, run.string(), run.string());
  } else if (o.step == "branch" && state->open) {
    const BranchRecord& b = state->open->branches.back();
    std::cout << fmt::format("branch {} of iteration {}: {} {}{}\n", b.id, state->open->index,
                             b.kernel, point_to_string(b.point),
                             b.ablates.empty() ? "" : " (ablates " + b.ablates + ")");
    for (const auto& p : b.expect)
      std::cout << "  prediction recorded: " << p.text << " (" << p.metric << ")\n";
  } else {
    print_run(*state, run);
  }
  if (o.step == "close" || o.step == "finalize") write_run_reports(run);
  return 0;
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
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", cmd},
                                {"versions", o.versions},
                                {"champion", c ? c->index : -1}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{} v{}; the champion is now {}\n", o.mask ? "masked" : "unmasked",
                             fmt::join(o.versions, ", v"),
                             c ? "v" + std::to_string(c->index) : "none");
  }
  return 0;
}

}  // namespace kopt::cli
