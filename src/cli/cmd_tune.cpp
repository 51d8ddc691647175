// `kopt tune PROBLEM --strategy S --budget N`: search a kernel's parameter space.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/tuner.hpp"
#include "kopt/report/explanation_markdown.hpp"

namespace kopt::cli {
namespace {

void print_tune(const TuneReport& r) {
  const SearchResult& s = r.search;
  std::cout << fmt::format("kopt tune {} / {} · {} · {} over {} points: {} evaluations, stopped by {}\n", r.problem,
                           r.kernel, r.device.name, search_strategy_name(s.strategy), r.space_size, s.history.size(),
                           s.stop_reason);
  if (s.skipped_infeasible || s.skipped_learned)
    std::cout << fmt::format("skipped: {} violating the constraints, {} by learned constraints\n", s.skipped_infeasible,
                             s.skipped_learned);
  for (const auto& h : s.learned)
    std::cout << fmt::format("learned: {}={} fails ({} times; e.g. {})\n", h.param, h.value, h.failures,
                             h.example_failure.substr(0, 120));
  std::vector<const Evaluation*> ok;
  std::size_t failed = 0;
  for (const auto& e : s.history) {
    if (e.ok) ok.push_back(&e);
    else ++failed;
  }
  std::sort(ok.begin(), ok.end(), [](auto* a, auto* b) { return a->cost < b->cost; });
  std::cout << "\nfastest points:\n";
  for (std::size_t i = 0; i < ok.size() && i < 5; ++i)
    std::cout << fmt::format("  {:>10}  {}{}\n", human_time(ok[i]->cost), point_to_string(ok[i]->point),
                             ok[i]->point == r.default_point ? "  (default)" : "");
  if (failed) std::cout << fmt::format("  ({} points failed)\n", failed);
  if (r.final_comparison && r.final_comparison->comparison) {
    const Comparison& c = *r.final_comparison->comparison;
    std::cout << fmt::format("\nbest / default time ratio {:.4f}, {:.0f}% CI [{:.4f}, {:.4f}] over {} interleaved pairs: "
                             "the best point is {}\n",
                             c.ratio, 100 * c.confidence, c.ci_low, c.ci_high, c.pairs, verdict_name(c.verdict));
  } else if (s.best && s.best->point == r.default_point) {
    std::cout << "\nthe default point is the fastest found\n";
  }
}

}  // namespace

int run_tune_command(const GlobalOptions& g, const TuneCliOptions& o) {
  auto sel = load_selection(o.sel);
  if (!sel) return report_error(g, "tune", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;
  TuneRequest req;
  if (o.sel.kernels.size() > 1) return report_error(g, "tune", 2, "tune searches one kernel: name it with --kernel");
  if (!o.sel.kernels.empty()) {
    req.kernel = o.sel.kernels[0];
  } else {
    for (const auto& k : problem.kernels)
      if (!k.params.empty() && req.kernel.empty()) req.kernel = k.name;
    if (req.kernel.empty()) return report_error(g, "tune", 2, "no kernel of " + problem.name + " has params to tune");
  }
  const KernelSpec* ks = problem.find_kernel(req.kernel);
  if (!ks) return report_error(g, "tune", 2, "--kernel " + req.kernel + ": no such kernel");
  if (auto used = check_assignments_used(problem, {ks}, sel->sets, "--set"); !used)
    return report_error(g, "tune", 2, used.error().to_string());
  req.fixed = sel->sets;
  auto strategy = parse_search_strategy(o.strategy);
  if (!strategy) return report_error(g, "tune", 2, "--strategy " + o.strategy + ": unknown");
  req.search.strategy = *strategy;
  req.search.budget.max_evaluations = o.budget;
  req.search.budget.max_wall_s = o.time_budget_s;
  req.search.seed = o.seed;
  req.bench.rule.max_time_s = o.max_time_s;
  req.bench.rule.min_time_s = std::min(0.2, o.max_time_s);
  req.bench.rule.max_noise = 0.01;
  req.arch = o.sel.arch;
  req.cache_root = cache_dir();
  bool tty = !g.json;
  req.search.progress = [tty](const SearchProgress& p) {
    if (!tty) return;
    std::cerr << fmt::format("kopt tune: [{}/{}] best {}{}\n", p.evaluations, p.budget,
                             p.best ? human_time(p.best->cost) + " (" + point_to_string(p.best->point) + ")" : "none yet",
                             p.time_left_s > 0 ? fmt::format(" · {:.0f} s left", p.time_left_s) : "");
  };
  if (g.verbose) req.log = [](const std::string& line) { std::cerr << "kopt:" << line << "\n"; };

  TempDir tmp("kopt-worker");
  WorkerClient worker(worker_options(o.sel.device, tmp.path()));
  auto compiler = make_compiler(worker);
  SystemCommandRunner runner;
  auto report = run_tune(problem, req, CheckContext{*compiler, runner, worker});
  if (!report) return report_error(g, "tune", exit_code(report.error().kind), report.error().to_string());
  if (g.json) std::cout << to_json(*report).dump(2) << "\n";
  else print_tune(*report);
  return report->exit_code();
}

}  // namespace kopt::cli
