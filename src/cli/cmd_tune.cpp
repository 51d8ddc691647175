// `kopt tune PROBLEM --strategy S --budget N`: search a kernel's parameter space.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/parallel.hpp"
#include "kopt/core/units.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/tune/champion_file.hpp"
#include "kopt/tune/search_space.hpp"
#include "kopt/tune/tuner.hpp"
#include "tune_cli.hpp"

namespace kopt::cli {
using tune::Confirmed;
using tune::ConfirmRule;
using tune::parse_search_strategy;
using tune::search_strategy_name;
using tune::SearchProgress;
using tune::SearchResult;
using tune::TuneReport;
using tune::TuneRequest;
}  // namespace kopt::cli

namespace kopt::cli {
namespace {

void print_times(const TuneReport& r) {
  const auto &sc = r.stages.screening, &cf = r.stages.confirmation;
  std::cout << fmt::format(
      "\ntime: {:.1f} s wall, {:.0f} configs/min ({} build threads, batches of {})\n"
      "  screening     {:6.1f} s: build {:.1f}, check {:.1f}, measure {:.1f}, other {:.1f}\n"
      "  confirmation  {:6.1f} s: check {:.1f}, measure {:.1f}, other {:.1f}\n"
      "  comparison    {:6.1f} s (champion against the default)\n",
      r.wall_s, r.configs_per_min(), r.jobs, r.batch, sc.total(), sc.build_s, sc.check_s,
      sc.measure_s, sc.other_s, cf.total(), cf.check_s, cf.measure_s, cf.other_s + cf.build_s,
      r.compare_s);
}

void print_tune(const TuneReport& r) {
  const SearchResult& s = r.stages.search;
  std::cout << fmt::format(
      "kopt tune {} / {} · {} · {} over {} points: {} screened, stopped by {}\n", r.problem,
      r.kernel, r.device().name, search_strategy_name(s.strategy), r.space_size, s.history.size(),
      s.stop_reason);
  if (r.devices.size() > 1) {
    std::vector<std::size_t> per(r.devices.size(), 0);
    for (const auto& e : s.history)
      if (e.device >= 0 && static_cast<std::size_t>(e.device) < per.size())
        ++per[static_cast<std::size_t>(e.device)];
    std::cout << "devices:";
    for (std::size_t d = 0; d < r.devices.size(); ++d)
      std::cout << fmt::format("{} {}{}{} ({} screened{})", d ? "," : "", r.devices[d].ordinal,
                               r.devices[d].pci_bus_id.empty() ? "" : " " + r.devices[d].pci_bus_id,
                               r.devices[d].host.empty() ? "" : " on " + r.devices[d].host, per[d],
                               d == r.confirmed_on ? ", confirms" : "");
    std::cout << "\n";
  }
  for (const auto& n : r.device_notes) std::cout << "note: " << n << "\n";
  if (s.skipped_infeasible || s.skipped_learned)
    std::cout << fmt::format("skipped: {} violating the constraints, {} by learned constraints\n",
                             s.skipped_infeasible, s.skipped_learned);
  for (const auto& h : s.learned)
    std::cout << fmt::format("learned: {}={} fails ({} times; e.g. {})\n", h.param, h.value,
                             h.failures, h.example_failure.substr(0, 120));
  std::size_t failed = 0;
  for (const auto& e : s.history) failed += !e.ok;
  std::cout << "\nconfirmed (full measurement; the screening median beside it ranks only):\n";
  std::vector<const Confirmed*> confirmed;
  for (const auto& c : r.stages.confirmed) confirmed.push_back(&c);
  std::stable_sort(confirmed.begin(), confirmed.end(), [](auto* a, auto* b) {
    return a->ok != b->ok ? a->ok : a->summary.median < b->summary.median;
  });
  for (const Confirmed* c : confirmed) {
    std::string note = c->point == r.default_point ? "  (default)" : "";
    if (r.stages.champion && c->point == r.stages.champion->point) note += "  champion";
    if (c->ok)
      std::cout << fmt::format("  {:>10} ±{:.1f}%  screened {:>10}  {}{}\n",
                               human_time(c->summary.median), 100 * c->summary.rel_noise,
                               human_time(c->screened_s), point_to_string(c->point), note);
    else
      std::cout << fmt::format("  {:>10}  {}: {}\n", "failed", point_to_string(c->point),
                               c->failure.substr(0, 160));
  }
  if (auto note = tune::reorder_note(r.stages.confirmed)) std::cout << "  note: " << *note << "\n";
  if (failed)
    std::cout << fmt::format("  ({} of {} points failed: compile, run or check)\n", failed,
                             s.history.size());
  if (r.final_comparison && r.final_comparison->comparison) {
    const Comparison& c = *r.final_comparison->comparison;
    std::cout << fmt::format(
        "\nchampion / default time ratio {:.4f}, {:.0f}% CI [{:.4f}, {:.4f}] over {} interleaved "
        "pairs: the champion is {}\n",
        c.ratio, 100 * c.confidence, c.ci_low, c.ci_high, c.pairs, verdict_name(c.verdict));
    if (auto caveat = tune::champion_caveat(r)) std::cout << "  note: " << *caveat << "\n";
  } else if (r.stages.champion && r.stages.champion->point == r.default_point) {
    std::cout << "\nthe default point is the fastest confirmed\n";
  }
  print_times(r);
}

// One line on a terminal, rewritten in place; a line per batch into a file or a pipe.
void print_progress(const SearchProgress& p) {
  static const bool tty = ::isatty(STDERR_FILENO) != 0;
  double per_min = p.elapsed_s > 0 ? 60.0 * double(p.evaluations) / p.elapsed_s : 0.0;
  std::string line = fmt::format(
      "kopt tune: {}/{} screened · {:.0f} configs/min · best {}{}", p.evaluations, p.budget,
      per_min,
      p.best ? human_time(p.best->cost) + " (screening, " + point_to_string(p.best->point) + ")"
             : "none yet",
      p.time_left_s > 0 ? fmt::format(" · {:.0f} s left", p.time_left_s) : "");
  if (tty)
    std::cerr << "\r\033[K" << line << std::flush;
  else
    std::cerr << line << "\n";
}

// --confirm: auto, all, or N.
std::optional<ConfirmRule> parse_confirm(const std::string& text) {
  ConfirmRule rule;
  if (text == "auto") return rule;
  if (text == "all") {
    rule.max = 0;
    return rule;
  }
  try {
    std::size_t used = 0;
    long n = std::stol(text, &used);
    if (used != text.size() || n < 1) return std::nullopt;
    rule.max = static_cast<std::size_t>(n);
    rule.top = std::min(rule.top, rule.max);
    return rule;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The champion written where a later command (or person) finds it; the path, or why none.
struct ChampionFile {
  std::filesystem::path path;
  std::optional<std::string> reuse;  // the command that runs the champion again
  std::optional<Error> error;
};

ChampionFile write_champion(const GlobalOptions& g, const TuneCliOptions& o,
                            const std::map<std::string, std::int64_t>& dims,
                            const std::map<std::string, std::int64_t>& held, const TuneReport& r) {
  tune::TuneInvocation how{o.sel.problem,
                           g.backend == "auto" && device_family() == DeviceFamily::cuda
                               ? std::string()
                               : std::string(device_family_name(device_family())),
                           dims,
                           held,
                           o.strategy,
                           o.budget,
                           o.seed};
  ChampionFile out;
  out.path = o.out.empty() ? tune::default_champion_path(r.problem, r.kernel)
                           : std::filesystem::path(o.out);
  out.reuse = tune::reuse_command(r, how);
  if (!out.reuse) return out;  // nothing to keep: an earlier champion there stays
  if (auto w = write_text_atomic(out.path, champion_json(r, how, utc_timestamp()).dump(2) + "\n");
      !w)
    out.error = w.error();
  return out;
}

void print_champion_file(const ChampionFile& f) {
  if (!f.reuse) {
    std::cout << "\nno champion: nothing written\n";
    return;
  }
  if (f.error) return;  // said as the command's error
  std::cout << fmt::format("\nchampion written to {}; run it again with:\n  {}\n", f.path.string(),
                           *f.reuse);
}

// One shape: the report printed (text, or JSON when `doc` is null) and put in *doc, the champion
// file written only then (at several shapes, the dispatch table is what is written); the exit
// code. An error goes into *doc too, where there is one.
int tune_one(const GlobalOptions& g, TuneCliOptions& o, ProblemSelection selection,
             nlohmann::json* doc) {
  auto report_error = [doc](const GlobalOptions& gl, const std::string& command, int code,
                            const std::string& message) {
    return cli::report_error(gl, command, code, message, doc);
  };
  auto sel = load_selection(selection);
  if (!sel) return report_error(g, "tune", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;
  TuneRequest req;
  if (o.sel.kernels.size() > 1)
    return report_error(g, "tune", 2, "tune searches one kernel: name it with --kernel");
  if (!o.sel.kernels.empty()) {
    req.kernel = o.sel.kernels[0];
  } else {
    for (const auto& k : problem.kernels)
      if (!k.params.empty() && req.kernel.empty()) req.kernel = k.name;
    if (req.kernel.empty())
      return report_error(g, "tune", 2, "no kernel of " + problem.name + " has params to tune");
  }
  auto chosen = select_kernels(problem, {req.kernel});
  if (!chosen) return report_error(g, "tune", 2, chosen.error().to_string());
  const KernelSpec* ks = chosen->front();
  if (auto used = check_assignments_used(problem, {ks}, sel->sets, "--set"); !used)
    return report_error(g, "tune", 2, used.error().to_string());
  req.fixed = sel->sets;
  // auto: the whole space where it fits the budget (every point, in screening order), else a
  // random sample of it.
  std::optional<tune::SearchStrategy> strategy;
  if (o.strategy == "auto") {
    tune::SearchSpace space = tune::SearchSpace::from_kernel(*ks, problem.dim_scope());
    space.hold(req.fixed);
    strategy =
        space.size() <= o.budget ? tune::SearchStrategy::exhaustive : tune::SearchStrategy::random;
    if (!g.json)
      std::cerr << fmt::format("kopt tune: strategy {}: {} points in the space, budget {}\n",
                               search_strategy_name(*strategy), space.size(), o.budget);
  } else {
    strategy = parse_search_strategy(o.strategy);
  }
  if (!strategy) return report_error(g, "tune", 2, "--strategy " + o.strategy + ": unknown");
  // At the second shape on, the search starts from what the nearest shapes found: where the
  // space is too large to search whole, it climbs from there and stops when the climbs converge.
  std::vector<std::string> transfer_from;
  if (doc && o.shape_search != "alone" && !o.tuned.empty()) {
    auto [starts, from] = transferred_starts(o, sel->dims);
    req.search.start = starts;
    transfer_from = from;
    if (o.shape_search == "climb" && o.strategy == "auto" &&
        *strategy == tune::SearchStrategy::random) {
      strategy = tune::SearchStrategy::local;
      req.search.climbs_from_start = starts.size();
    }
    if (!g.json)
      std::cerr << fmt::format("kopt tune: transfer: {} from the champions of {}\n",
                               *strategy == tune::SearchStrategy::local ? "climbing" : "starting",
                               fmt::join(from, "; "));
  }
  req.search.strategy = *strategy;
  req.search.budget.max_evaluations = o.budget;
  req.search.budget.max_wall_s = o.time_budget_s;
  req.search.seed = o.seed;
  req.full = evaluate::Rigour::decide(o.max_time_s);
  req.full.timing.verify_on = parse_verify_on(o.verify_on);
  req.screen_samples = o.screen_samples;
  auto confirm = parse_confirm(o.confirm);
  if (!confirm)
    return report_error(g, "tune", 2,
                        "--confirm " + o.confirm + ": expected auto, all or a number >= 1");
  req.confirm = *confirm;
  req.search.batch = o.batch;
  if (!g.json) req.search.progress = print_progress;

  auto pool =
      evaluate::WorkerPool::open({device_family(), o.gpus, o.cluster, o.sel.device, o.allow_mixed});
  if (!pool) return report_error(g, "tune", exit_code(pool.error().kind), pool.error().to_string());
  if (std::string d = (*pool)->description(); !d.empty() && !g.json)
    std::cerr << "kopt tune: " << d << "\n";
  evaluate::EvaluatorOptions eo;
  eo.arch = o.sel.arch;
  eo.cache_root = cache_dir();
  eo.jobs = o.jobs > 0 ? o.jobs : hardware_jobs();
  eo.allow_mixed = o.allow_mixed;
  if (g.verbose) eo.log = [](const std::string& line) { std::cerr << "kopt:" << line << "\n"; };
  evaluate::Evaluator ev(problem, (*pool)->contexts(), eo);
  auto report = run_tune(req, ev);
  if (!report)
    return report_error(g, "tune", exit_code(report.error().kind), report.error().to_string());
  if (doc) {
    *doc = to_json(*report);
    (*doc)["transfer_from"] = transfer_from;
    o.tuned.emplace_back(sel->dims, best_confirmed(*doc));
    o.goal = problem.goal;
    if (!g.json) {
      if (::isatty(STDERR_FILENO)) std::cerr << "\n";
      print_tune(*report);
    }
    return report->exit_code();
  }
  ChampionFile file = write_champion(g, o, sel->dims, req.fixed, *report);
  if (g.json) {
    nlohmann::json j = to_json(*report);
    j["champion_file"] = file.reuse && !file.error ? nlohmann::json(file.path.string()) : nullptr;
    j["reuse_command"] = file.reuse ? nlohmann::json(*file.reuse) : nullptr;
    j["champion_file_error"] = file.error ? nlohmann::json(file.error->to_string()) : nullptr;
    std::cout << j.dump(2) << "\n";
  } else {
    if (::isatty(STDERR_FILENO)) std::cerr << "\n";  // ends the progress line
    print_tune(*report);
    print_champion_file(file);
  }
  if (file.error) {  // the results above stand; the file a later step reads is missing
    std::cerr << "kopt tune: the champion could not be written: " << file.error->to_string()
              << "\n";
    return exit_code(file.error->kind);
  }
  return report->exit_code();
}

int run_tune_command(const GlobalOptions& g, TuneCliOptions& o) {
  return run_over_shapes(
      g, "tune", o.sel, o.axes,
      [&](ProblemSelection& s, nlohmann::json* doc) { return tune_one(g, o, s, doc); },
      [&](const nlohmann::json& shapes, bool print) { return tune_dispatch(o, shapes, print); });
}

}  // namespace

std::vector<Command> tune_commands(const GlobalRef& g) {
  auto o = std::make_shared<TuneCliOptions>();
  Command c{.path = {"tune"},
            .help = "search a kernel's parameter space (strategy, budget)",
            .run = [g, o] { return run_tune_command(*g, *o); },
            .storage = o};
  add_selection(c, o->sel);
  add_axes(c, o->axes);
  c.options.insert(
      c.options.end(),
      {{.names = "--strategy",
        .help = "auto (exhaustive where the space fits the budget, else random), exhaustive, "
                "random, local, annealing or genetic",
        .target = &o->strategy,
        .choices = {"auto", "exhaustive", "random", "local", "annealing", "genetic"}},
       {.names = "--budget",
        .help = "points to evaluate at most",
        .target = &o->budget,
        .range = {{1, 100000}}},
       {.names = "--time-budget",
        .help = "seconds the search may take (0: no limit)",
        .target = &o->time_budget_s,
        .non_negative = true},
       {.names = "--seed", .help = "random seed of the strategy", .target = &o->seed},
       {.names = "--max-time",
        .help = "time cap of each full measurement (s)",
        .target = &o->max_time_s,
        .positive = true},
       verify_on_option(&o->verify_on),
       {.names = "--jobs",
        .help = "builds in parallel (0: the machine's cores)",
        .target = &o->jobs,
        .range = {{0, 1024}}},
       {.names = "--batch",
        .help = "candidates built, checked and screened together",
        .target = &o->batch,
        .range = {{1, 4096}}},
       {.names = "--screen-samples",
        .help = "timed samples of each candidate's screening",
        .target = &o->screen_samples,
        .range = {{3, 100000}}},
       {.names = "--confirm",
        .help = "candidates re-measured in full: auto (top 3 and those whose screening overlaps "
                "the leader's, at most 8), all, or N (top N and overlaps, at most N)",
        .target = &o->confirm},
       {.names = "--gpus",
        .help = "all, or N,M,...: one worker per device; screening batches are split over them, "
                "confirmation and the final comparison run on the first",
        .target = &o->gpus},
       {.names = "--cluster",
        .help = "ray, or ray:ADDRESS: one worker per device of a Ray cluster (ray alone starts a "
                "local instance), as an actor on its node; see docs/cluster.md",
        .target = &o->cluster},
       {.names = "--shape-search",
        .help = "with --axis: transfer (each shape's search starts with the champions of the "
                "nearest shapes tuned before it), climb (a large space: hill climbs from those "
                "champions instead of a random sample, ending when they converge) or alone",
        .target = &o->shape_search,
        .choices = {"transfer", "climb", "alone"}},
       {.names = "--allow-mixed",
        .help = "with --gpus or --cluster: devices of different models in one run",
        .target = &o->allow_mixed},
       {.names = "--out",
        .help = "the champion's file: params, confirmed time, device, the command "
                "(default: kopt-tune/PROBLEM/KERNEL.json)",
        .target = &o->out}});
  return {c};
}

}  // namespace kopt::cli
