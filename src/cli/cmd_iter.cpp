// `kopt iter open|branch|close|finalize RUN`: the loop one step at a time, for an agent; and
// `kopt iter mask|unmask RUN`.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/dispatcher.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/optimize/gpu_lab.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "loop_machine.hpp"

namespace kopt::cli {
using optimize::iter_branch;
using optimize::iter_close;
using optimize::iter_finalize;
using optimize::iter_open;
using optimize::OptimizeOptions;
namespace {

struct IterStepCliOptions {
  std::string step;  // open | branch | close | finalize
  std::string run;
  std::string problem;  // open: for a new run
  std::string file;     // branch
  std::string kernel;
  std::vector<std::string> sets, methods;
  std::string ablates;
  std::string hypothesis;                   // branch: what the author expects and why
  std::vector<std::string> expect;          // branch: METRIC:up|down[:AMOUNT]
  std::string budget_formula = "headroom";  // open: headroom | kernelflow
  std::optional<std::string> arch;
  int device = 0;
  double max_time_s = evaluate::k_loop_max_time_s;
  bool sanitize = true;  // close: memcheck and racecheck on a new champion (--no-sanitize)
};

struct IterMaskCliOptions {
  std::string run;
  std::vector<int> versions;
  std::string reason;
  bool mask = true;
};

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
  if ((o.step == "open" || o.step == "close") && !evaluate::device_present(device_family()))
    return report_error(g, cmd, 3,
                        "no device here: kopt iter " + o.step + " measures and profiles");
  auto pool = evaluate::WorkerPool::open({device_family(), "", "", o.device, false});
  if (!pool) return report_error(g, cmd, exit_code(pool.error().kind), pool.error().to_string());
  LoopMachine m(std::move(*pool), problem, *catalog, sel, o.max_time_s, run, o.sanitize, false,
                opt.log);
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
    if (!it.pitfalls.empty()) std::cout << "pitfalls seen here before (the experience DB):\n";
    for (const auto& p : it.pitfalls) std::cout << "  " << p << "\n";
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

}  // namespace

std::vector<Command> iter_commands(const GlobalRef& g) {
  std::vector<Command> out;
  const char* names[4] = {"open", "branch", "close", "finalize"};
  const char* helps[4] = {
      "profile the champion; write the headroom, budget, ranked suggestions (or a reasoned "
      "stop) and hypothesis.md",
      "add a branch (a kernel source an agent wrote) to the open iteration",
      "measure the branches, pick the champion, check SASS, attribute, judge the predictions, "
      "record",
      "end the run"};
  for (int i = 0; i < 4; ++i) {
    auto s = std::make_shared<IterStepCliOptions>();
    s->step = names[i];
    Command c{.path = {"iter", names[i]},
              .help = helps[i],
              .run = [g, s] { return run_iter_step_command(*g, *s); },
              .document = "optimize",
              .storage = s};
    c.options.push_back(
        {.names = "run", .help = "run directory", .target = &s->run, .required = true});
    if (s->step == "open") {
      c.options.push_back({.names = "--problem",
                           .help = "problem directory (for a new run)",
                           .target = &s->problem});
      c.options.push_back({.names = "--budget-formula",
                           .help = "how the axis budget follows the profile: headroom (to the "
                                   "roofline) or kernelflow (KernelFlow's gaps)",
                           .target = &s->budget_formula,
                           .choices = {"headroom", "kernelflow"}});
    }
    if (s->step == "branch")
      c.options.insert(
          c.options.end(),
          {{.names = "--file",
            .help = "the branch's kernel source",
            .target = &s->file,
            .required = true},
           {.names = "--kernel",
            .help = "which kernel of the problem it replaces (default: the one with method "
                    "toggles)",
            .target = &s->kernel},
           {.names = "--set", .help = "param value NAME=VALUE (repeatable)", .target = &s->sets},
           {.names = "--method",
            .help = "a method this branch applies (repeatable)",
            .target = &s->methods},
           {.names = "--ablates",
            .help = "this branch is the winner without this method (leave-one-out)",
            .target = &s->ablates},
           {.names = "--hypothesis",
            .help = "what you expect this branch to do and why (recorded before measurement)",
            .target = &s->hypothesis},
           {.names = "--expect",
            .help = "a prediction METRIC:up|down[:AMOUNT] (repeatable): time, an alias such as "
                    "dram_throughput or stall_long_scoreboard, or a metric of the open's "
                    "profile; AMOUNT like 10% or 5",
            .target = &s->expect}});
    if (s->step == "open" || s->step == "close")
      c.options.insert(
          c.options.end(),
          {{.names = "--arch",
            .help = "target architecture (default: the device's)",
            .target = &s->arch},
           {.names = "--device",
            .help = "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)",
            .target = &s->device},
           {.names = "--max-time",
            .help = "time cap of each measurement (s)",
            .target = &s->max_time_s,
            .positive = true}});
    if (s->step == "close")
      c.options.push_back({.names = "--no-sanitize",
                           .help = "accept a new champion without running it under "
                                   "compute-sanitizer (memcheck, racecheck)",
                           .target = &s->sanitize,
                           .negates = true});
    out.push_back(c);
  }
  for (bool mask : {true, false}) {
    auto m = std::make_shared<IterMaskCliOptions>();
    m->mask = mask;
    Command c{.path = {"iter", mask ? "mask" : "unmask"},
              .help = mask ? "keep versions on record but out of every decision" : "undo mask",
              .run = [g, m] { return run_iter_mask_command(*g, *m); },
              .document = "iter mask",
              .storage = m};
    c.options.push_back(
        {.names = "run", .help = "run directory", .target = &m->run, .required = true});
    c.options.push_back({.names = "--version",
                         .help = "version number (repeatable)",
                         .target = &m->versions,
                         .required = true});
    if (mask)
      c.options.push_back(
          {.names = "--reason", .help = "why (kept in run.json)", .target = &m->reason});
    out.push_back(c);
  }
  return out;
}

}  // namespace kopt::cli
