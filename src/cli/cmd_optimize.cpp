// `kopt optimize PROBLEM` (the whole loop) and `kopt iter mask|unmask RUN`.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/dispatcher.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/optimize/gpu_lab.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/problem/shape_set.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "loop_machine.hpp"

namespace kopt::cli {
using optimize::OptimizeOptions;
using optimize::run_optimize;
namespace {

struct OptimizeCliOptions {
  ProblemSelection sel;
  int iterations = 5;
  int branches = 4;
  int patience = 2;
  std::uint64_t seed = 1;
  std::string start_kernel;
  std::string run;  // default kopt-runs/PROBLEM
  bool resume = false;
  std::string from;     // --from vK
  std::string restart;  // --restart mask-half
  double max_time_s = evaluate::k_loop_max_time_s;
  std::string experience_db;  // default: default_experience_db()
  bool use_experience = true;
  std::string proposer;
  double proposer_timeout_s = 600;
  std::string budget_formula = "headroom";  // headroom | kernelflow
  bool profile_branches = true;             // --no-branch-profiles: only the champion is profiled
  std::size_t space_budget = OptimizeOptions{}.space_budget;
  bool sanitize = true;  // memcheck and racecheck on a new champion (--no-sanitize)
  std::string gpus;      // --gpus all|N,M,...: a round's branches one per device
  std::string cluster;   // --cluster ray|ray:ADDRESS
  bool allow_mixed = false;
  ShapeFlags axes;  // --axis: a run per shape, in its own folder of --run
  Problem::Goal goal = Problem::Goal::latency;  // the problem's [goal], set by the first shape
};

// One shape (or the declared dims): the run, its report printed, and with `doc` its state put
// there (run_over_shapes) with a row for the summary over shapes.
int optimize_one(const GlobalOptions& g, OptimizeCliOptions& o, ProblemSelection selection,
                 nlohmann::json* doc) {
  auto report_error = [doc](const GlobalOptions& gl, const std::string& command, int code,
                            const std::string& message) {
    return cli::report_error(gl, command, code, message, doc);
  };
  // At several shapes each run has its own folder: RUN/M=1_N=4096.
  std::string shape;
  for (std::size_t i = o.sel.dims.size(); doc && i < selection.dims.size(); ++i)
    shape += (shape.empty() ? "" : "_") + selection.dims[i];
  auto sel = load_selection(selection);
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
  if (auto present = evaluate::device_present(device_family()); !present)
    return report_error(g, "optimize", 3, "no device here: " + present.error().message);
  OptimizeOptions opt;
  opt.iterations = o.iterations;
  opt.branches = o.branches;
  opt.patience = o.patience;
  opt.seed = o.seed;
  opt.start_kernel = o.start_kernel;
  opt.resume = o.resume || !o.from.empty() || !o.restart.empty();
  if (!o.from.empty()) {
    std::string k = o.from.starts_with("v") ? o.from.substr(1) : o.from;
    char* end = nullptr;
    long v = std::strtol(k.c_str(), &end, 10);
    if (k.empty() || *end != '\0' || v < 0)
      return report_error(g, "optimize", 2,
                          "--from '" + o.from + "': a version of the run, like v2");
    opt.from_version = static_cast<int>(v);
  }
  if (o.restart == "mask-half") opt.restart = OptimizeOptions::Restart::mask_half;
  opt.proposer = o.proposer;
  opt.proposer_timeout_s = o.proposer_timeout_s;
  opt.budget_formula = parse_budget_formula(o.budget_formula).value_or(BudgetFormula::headroom);
  opt.profile_branches = o.profile_branches;
  opt.space_budget = o.space_budget;
  opt.run_dir =
      std::filesystem::absolute(o.run.empty() ? std::filesystem::path("kopt-runs") / problem.name
                                              : std::filesystem::path(o.run));
  if (!shape.empty()) opt.run_dir /= shape;
  if (!g.json || g.verbose) opt.log = stderr_log();
  auto pool =
      evaluate::WorkerPool::open({device_family(), o.gpus, o.cluster, o.sel.device, o.allow_mixed});
  if (!pool)
    return report_error(g, "optimize", exit_code(pool.error().kind), pool.error().to_string());
  std::string description = (*pool)->description();
  LoopMachine m(std::move(*pool), problem, *catalog, o.sel, o.max_time_s, opt.run_dir, o.sanitize,
                o.allow_mixed, opt.log);
  if (m.evaluator->workers() > 1) {
    auto devices = m.evaluator->devices();
    if (!devices)
      return report_error(g, "optimize", exit_code(devices.error().kind),
                          devices.error().to_string());
    if (opt.log) {
      opt.log(description + "; branches are measured one per worker, comparisons on one device");
      for (std::size_t w = 0; w < devices->size(); ++w)
        opt.log("worker " + std::to_string(w) + ": " + evaluate::device_label((*devices)[w]));
      for (const auto& n : m.evaluator->notes()) opt.log("note: " + n);
    }
  }
  std::optional<ExperienceDb> experience;
  if (o.use_experience) experience = open_experience(o.experience_db);
  if (experience) opt.experience = &*experience;
  auto state = run_optimize(problem, *catalog, opt, *m.lab, &m.git);
  if (!state)
    return report_error(g, "optimize", exit_code(state.error().kind), state.error().to_string());
  write_run_reports(opt.run_dir);
  if (doc) {
    *doc = to_json(*state);
    const VersionRecord* champion = state->champion();
    const VersionRecord* start = state->versions.empty() ? nullptr : &state->versions.front();
    (*doc)["run_dir"] = opt.run_dir.string();
    (*doc)["over_shapes"] = {
        {"start_s", start ? nlohmann::json(start->median_s) : nlohmann::json(nullptr)},
        {"champion_s", champion ? nlohmann::json(champion->median_s) : nlohmann::json(nullptr)},
        {"champion",
         champion ? champion->kernel +
                        (champion->point.empty() ? "" : " " + point_to_string(champion->point))
                  : ""},
        {"stop_reason", state->stop_reason},
        {"candidate", champion ? nlohmann::json{{"kernel", champion->kernel},
                                                {"point", champion->point},
                                                {"source", champion->source}}
                               : nlohmann::json(nullptr)}};
    o.goal = problem.goal;
  }
  if (g.json && !doc)
    std::cout << to_json(*state).dump(2) << "\n";
  else if (!g.json)
    print_run(*state, opt.run_dir);
  return state->champion() ? 0 : 1;
}

// [goal] kind = "throughput": every shape's champion measured at the other shapes, and the one
// with the least weighted sum of times over them all (each shape's weight from [goal] weights).
nlohmann::json throughput_champion(const OptimizeCliOptions& o, const nlohmann::json& shapes) {
  using nlohmann::json;
  std::vector<evaluate::Candidate> champions;
  for (const auto& s : shapes) {
    json c = s["result"].value("over_shapes", json::object()).value("candidate", json());
    if (!c.is_object()) continue;
    auto point = c["point"].get<std::map<std::string, std::int64_t>>();
    evaluate::Candidate cand{c["kernel"], point, c.value("source", std::string())};
    if (std::find(champions.begin(), champions.end(), cand) == champions.end())
      champions.push_back(cand);
  }
  std::vector<double> weights;
  std::vector<std::vector<std::optional<double>>> times;
  for (const auto& s : shapes) {
    weights.push_back(s.value("weight", 1.0));
    times.push_back(measure_at_shape(o.sel, shape_dims(s), champions, o.max_time_s));
  }
  WeightedChoice w = weighted_choice(weights, times);
  if (!w.best) return {{"candidate", nullptr}, {"note", "no champion ran at every shape"}};
  const auto& c = champions[*w.best];
  std::string name =
      c.kernel +
      (c.sets.empty() ? "" : " " + point_to_string(ParamPoint(c.sets.begin(), c.sets.end())));
  return {{"candidate", name},
          {"weighted_s", w.weighted_s},
          {"own_best_weighted_s", w.own_best_weighted_s},
          {"text", fmt::format("goal throughput: one kernel for every shape, {}: weighted time {}, "
                               "{:+.1f} % over the best measured at each shape ({})",
                               name, human_time(w.weighted_s),
                               100.0 * (w.weighted_s / w.own_best_weighted_s - 1),
                               human_time(w.own_best_weighted_s))}};
}

// Over shapes: per shape the start (v0) and the champion, the speedup of the loop there, and
// best / typical / worst / geometric mean of that speedup; with a throughput goal, the one
// champion for every shape.
nlohmann::json optimize_summary(const OptimizeCliOptions& o, const nlohmann::json& shapes,
                                bool print) {
  using nlohmann::json;
  json rows = json::array();
  std::vector<double> speedups;
  for (const auto& s : shapes) {
    json run = s["result"].value("over_shapes", json::object());
    double start = run.value("start_s", json()).is_number() ? run["start_s"].get<double>() : 0;
    double best = run.value("champion_s", json()).is_number() ? run["champion_s"].get<double>() : 0;
    json speedup = start > 0 && best > 0 ? json(start / best) : json(nullptr);
    if (speedup.is_number()) speedups.push_back(speedup);
    rows.push_back({{"shape", shape_display(s)},
                    {"start_s", start > 0 ? json(start) : json(nullptr)},
                    {"champion_s", best > 0 ? json(best) : json(nullptr)},
                    {"champion", run.value("champion", "")},
                    {"speedup", speedup},
                    {"stop_reason", run.value("stop_reason", "")},
                    {"error", s["result"].value("error", "")}});
  }
  OverShapes st = over_shapes(speedups);
  json out{{"rows", rows}, {"speedup", stats_json(st)}};
  if (o.goal == Problem::Goal::throughput) out["throughput"] = throughput_champion(o, shapes);
  if (!print) return out;
  std::cout << fmt::format("\nover {} shapes:\n  {:<28} {:>12} {:>12} {:>8}  {}\n", shapes.size(),
                           "shape", "start", "champion", "speedup", "champion");
  for (const auto& r : rows) {
    auto t = [](const json& v) { return v.is_number() ? human_time(v.get<double>()) : "-"; };
    std::cout << fmt::format(
        "  {:<28} {:>12} {:>12} {:>8}  {}\n", r["shape"].get<std::string>(), t(r["start_s"]),
        t(r["champion_s"]),
        r["speedup"].is_number() ? fmt::format("{:.2f}x", r["speedup"].get<double>()) : "-",
        r["error"].get<std::string>().empty() ? r["champion"].get<std::string>()
                                              : r["error"].get<std::string>());
  }
  if (st.n)
    std::cout << fmt::format(
        "  speedup of the loop: best {:.2f}x, typical {:.2f}x, worst {:.2f}x, geomean {:.2f}x\n",
        st.best, st.typical, st.worst, st.geomean);
  if (out.contains("throughput"))
    std::cout << "  " << out["throughput"].value("text", out["throughput"].value("note", ""))
              << "\n";
  return out;
}

int run_optimize_command(const GlobalOptions& g, OptimizeCliOptions& o) {
  return run_over_shapes(
      g, "optimize", o.sel, o.axes,
      [&](ProblemSelection& s, nlohmann::json* doc) { return optimize_one(g, o, s, doc); },
      [&](const nlohmann::json& shapes, bool print) { return optimize_summary(o, shapes, print); });
}

}  // namespace

std::vector<Command> optimize_commands(const GlobalRef& g) {
  std::vector<Command> out;
  auto o = std::make_shared<OptimizeCliOptions>();
  Command opt{.path = {"optimize"},
              .help = "the whole loop: profile, methods, branches, champion, ablation",
              .run = [g, o] { return run_optimize_command(*g, *o); },
              .storage = o};
  add_selection(opt, o->sel);
  add_axes(opt, o->axes);
  opt.options.insert(
      opt.options.end(),
      {{.names = "--iterations",
        .help = "iterations at most",
        .target = &o->iterations,
        .range = {{1, 100}}},
       {.names = "--branches",
        .help = "branches per iteration",
        .target = &o->branches,
        .range = {{1, 64}}},
       {.names = "--patience",
        .help = "stop after this many iterations without improvement",
        .target = &o->patience,
        .range = {{1, 100}}},
       {.names = "--seed", .help = "seed of the branch tunings", .target = &o->seed},
       {.names = "--start-kernel",
        .help = "v0 (default: the first kernel without method toggles)",
        .target = &o->start_kernel},
       {.names = "--run", .help = "run directory (default: kopt-runs/PROBLEM)", .target = &o->run},
       {.names = "--resume", .help = "continue the run in --run", .target = &o->resume},
       {.names = "--from",
        .help = "restart the run in --run from its version vK (every accepted version after it "
                "masked); --iterations more",
        .target = &o->from},
       {.names = "--restart",
        .help = "mask-half: restart the run in --run with the newer half of its accepted "
                "versions masked; --iterations more",
        .target = &o->restart,
        .choices = {"mask-half"}},
       {.names = "--max-time",
        .help = "time cap of each measurement (s)",
        .target = &o->max_time_s,
        .positive = true},
       {.names = "--experience-db",
        .help = "experience DB to learn from and write to (default: $KOPT_EXPERIENCE_DB or "
                "~/.local/share/kopt/experience.db)",
        .target = &o->experience_db},
       {.names = "--no-experience",
        .help = "neither consult nor record experience",
        .target = &o->use_experience,
        .negates = true},
       {.names = "--proposer",
        .help = "a command that writes each iteration's branches (analysis JSON on stdin; see "
                "docs/optimize.md)",
        .target = &o->proposer},
       {.names = "--budget-formula",
        .help = "how the axis budget follows the profile: headroom (to the roofline) or "
                "kernelflow (KernelFlow's gaps)",
        .target = &o->budget_formula,
        .choices = {"headroom", "kernelflow"}},
       {.names = "--proposer-timeout",
        .help = "seconds the proposer may take per iteration",
        .target = &o->proposer_timeout_s,
        .positive = true},
       {.names = "--space-budget",
        .help = "screen a kernel's whole space (tune's screen-then-confirm) in the first round "
                "that tunes it when it has at most this many points, else a neighbourhood of the "
                "champion with this many evaluations; 0: branches only",
        .target = &o->space_budget,
        .range = {{0, 100000}}},
       {.names = "--no-branch-profiles",
        .help = "profile only each iteration's champion, not every branch of a round (in one "
                "ncu session)",
        .target = &o->profile_branches,
        .negates = true},
       {.names = "--no-sanitize",
        .help = "accept a new champion without running it under compute-sanitizer (memcheck, "
                "racecheck)",
        .target = &o->sanitize,
        .negates = true},
       {.names = "--gpus",
        .help = "all, or N,M,...: one worker per device; a round's branches are measured one per "
                "worker, comparisons with the champion, profiles and checks on the first",
        .target = &o->gpus},
       {.names = "--cluster",
        .help = "ray, or ray:ADDRESS: one worker per device of a Ray cluster, as --gpus does on "
                "one host",
        .target = &o->cluster},
       {.names = "--allow-mixed",
        .help = "with --gpus or --cluster: devices of different models",
        .target = &o->allow_mixed}});
  out.push_back(opt);

  return out;
}

}  // namespace kopt::cli
