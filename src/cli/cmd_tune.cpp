// `kopt tune PROBLEM --strategy S --budget N`: search a kernel's parameter space.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
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
#include "kopt/tune/dispatch.hpp"
#include "kopt/tune/search_space.hpp"
#include "kopt/tune/tuner.hpp"

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

struct TuneCliOptions {
  ProblemSelection sel;
  ShapeFlags axes;  // --axis NAME=V1,V2,...: a champion per shape, a dispatch table
  std::string strategy = "auto";
  std::size_t budget = 30;
  double time_budget_s = 0;
  std::uint64_t seed = 1;
  double max_time_s = evaluate::k_tune_max_time_s;
  unsigned jobs = 0;                                      // 0: the machine's cores
  std::size_t batch = tune::TuneRequest::k_screen_batch;  // candidates screened together
  std::size_t screen_samples = tune::TuneRequest{}.screen_samples;
  std::string confirm = "auto";  // auto (the rule), all, or a number: at most that many
  std::string gpus;              // --gpus all|N,M,...: screening split over these devices
  std::string cluster;           // --cluster ray|ray:ADDRESS
  bool allow_mixed = false;
  std::string out;  // the champion file (default: kopt-tune/PROBLEM/KERNEL.json)
  // --shape-search, at several shapes: transfer (a shape's search evaluates the champions of the
  // nearest shapes already tuned first, then searches as alone does), climb (where the space is
  // larger than the budget, it climbs from those champions and stops when the climbs converge)
  // or alone (each shape searched as if it were the only one).
  std::string shape_search = "transfer";
  Problem::Goal goal = Problem::Goal::latency;  // the problem's [goal], set by the first shape
  // The shapes tuned so far in this command: their dims and best confirmed points, best first.
  std::vector<std::pair<std::map<std::string, std::int64_t>, std::vector<ParamPoint>>> tuned;
};

// The points a shape's search starts from under --shape-search transfer: the best two confirmed
// points of each of the two tuned shapes nearest to `dims` (distance: the sum over dims of
// |log(a / b)|), nearest first; and those shapes' labels.
std::pair<std::vector<ParamPoint>, std::vector<std::string>> transferred_starts(
    const TuneCliOptions& o, const std::map<std::string, std::int64_t>& dims) {
  std::vector<std::pair<double, std::size_t>> near;
  for (std::size_t i = 0; i < o.tuned.size(); ++i) {
    double d = 0;
    for (const auto& [n, v] : o.tuned[i].first)
      if (auto it = dims.find(n); it != dims.end() && v > 0 && it->second > 0)
        d += std::abs(std::log(double(v) / double(it->second)));
    near.emplace_back(d, i);
  }
  std::sort(near.begin(), near.end());
  std::vector<ParamPoint> starts;
  std::vector<std::string> from;
  for (std::size_t k = 0; k < std::min<std::size_t>(2, near.size()); ++k) {
    const auto& [shape, points] = o.tuned[near[k].second];
    std::string label;
    for (const auto& [n, v] : shape)
      label += (label.empty() ? "" : " ") + n + "=" + std::to_string(v);
    from.push_back(label);
    for (std::size_t j = 0; j < std::min<std::size_t>(2, points.size()); ++j)
      if (std::find(starts.begin(), starts.end(), points[j]) == starts.end())
        starts.push_back(points[j]);
  }
  return {starts, from};
}

// A shape's best confirmed points, best first, from its tune document.
std::vector<ParamPoint> best_confirmed(const nlohmann::json& doc) {
  std::vector<std::pair<double, ParamPoint>> ok;
  for (const auto& c : doc.value("confirmed", nlohmann::json::array()))
    if (c.value("ok", false))
      ok.emplace_back(c["summary"].value("median", 0.0), c["point"].get<ParamPoint>());
  std::sort(ok.begin(), ok.end());
  std::vector<ParamPoint> out;
  for (auto& [t, p] : ok) out.push_back(std::move(p));
  return out;
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

// Each shape's champion (the first confirmed point of each shape's tune) measured at the shapes
// where it was not confirmed, with tune's confirmation rigour; what fails there is left out.
void cross_measure(const TuneCliOptions& o, const nlohmann::json& shapes, const std::string& kernel,
                   std::vector<tune::ShapeResults>& results) {
  std::vector<ParamPoint> champions;
  for (const auto& s : shapes) {
    const auto& champ = s["result"].value("champion", nlohmann::json());
    if (champ.is_object() && champ.contains("point")) {
      auto p = champ["point"].get<ParamPoint>();
      if (std::find(champions.begin(), champions.end(), p) == champions.end())
        champions.push_back(p);
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::vector<evaluate::Candidate> missing;
    for (const auto& p : champions)
      if (std::none_of(results[i].measured.begin(), results[i].measured.end(),
                       [&](const auto& m) { return m.first == p; }))
        missing.push_back({kernel, std::map<std::string, std::int64_t>(p.begin(), p.end()), {}});
    auto times = measure_at_shape(o.sel, results[i].dims, missing, o.max_time_s);
    for (std::size_t j = 0; j < missing.size(); ++j)
      if (times[j])
        results[i].measured.emplace_back(ParamPoint(missing[j].sets.begin(), missing[j].sets.end()),
                                         *times[j]);
  }
}

// [goal] kind = "throughput": the one configuration, among those measured at every shape, with
// the least weighted sum of times over the shapes ([goal] weights), beside what the dispatch
// table's per-shape choices would sum to.
nlohmann::json throughput_choice(const nlohmann::json& shapes,
                                 const std::vector<tune::ShapeResults>& results) {
  std::vector<double> weights;
  for (const auto& s : shapes) weights.push_back(s.value("weight", 1.0));
  std::vector<ParamPoint> points;  // every point measured at some shape
  for (const auto& r : results)
    for (const auto& [p, t] : r.measured)
      if (std::find(points.begin(), points.end(), p) == points.end()) points.push_back(p);
  std::vector<std::vector<std::optional<double>>> times(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    for (const auto& p : points) {
      auto m = std::find_if(results[i].measured.begin(), results[i].measured.end(),
                            [&](const auto& x) { return x.first == p; });
      times[i].push_back(m == results[i].measured.end() ? std::nullopt
                                                        : std::optional<double>(m->second));
    }
  WeightedChoice c = weighted_choice(weights, times);
  if (!c.best)
    return {{"config", nullptr}, {"note", "no configuration was measured at every shape"}};
  const ParamPoint& best = points[*c.best];
  return {{"config", best},
          {"weighted_s", c.weighted_s},
          {"own_best_weighted_s", c.own_best_weighted_s},
          {"text", fmt::format("goal throughput: one configuration for every shape, {}: weighted "
                               "time {}, {:+.1f} % over each shape at its own best ({})",
                               point_to_string(best), human_time(c.weighted_s),
                               100.0 * (c.weighted_s / c.own_best_weighted_s - 1),
                               human_time(c.own_best_weighted_s))}};
}

// At several shapes: the dispatch table over the shapes' confirmed measurements, written beside
// where the champion file goes (KERNEL.dispatch.json and .hpp) and printed.
nlohmann::json tune_dispatch(const TuneCliOptions& o, const nlohmann::json& shapes, bool print) {
  using nlohmann::json;
  std::vector<tune::ShapeResults> results;
  std::string problem, kernel, device;
  for (const auto& s : shapes) {
    tune::ShapeResults r;
    r.label = s["label"];
    r.dims = shape_dims(s);
    const json& doc = s["result"];
    problem = doc.value("problem", problem);
    kernel = doc.value("kernel", kernel);
    device = doc.value("device", device);
    for (const auto& c : doc.value("confirmed", json::array()))
      if (c.value("ok", false))
        r.measured.emplace_back(c["point"].get<ParamPoint>(), c["summary"].value("median", 0.0));
    results.push_back(std::move(r));
  }
  // Every shape's champion measured at every other shape, so that one configuration can stand
  // for several shapes on measurements, not on a guess.
  cross_measure(o, shapes, kernel, results);
  tune::DispatchTable t = tune::dispatch_table(results);
  json rows = json::array();
  for (const auto& r : t.rows)
    rows.push_back({{"shape", r.label},
                    {"config", r.config},
                    {"seconds", r.seconds},
                    {"best_s", r.best_s},
                    {"within", r.within}});
  json table{{"problem", problem},       {"kernel", kernel},     {"device", device},
             {"tolerance", t.tolerance}, {"configs", t.configs}, {"rows", rows}};
  // What the search over shapes cost: evaluations and seconds per shape, in all.
  std::size_t evaluations = 0;
  double search_s = 0;
  for (const auto& s : shapes) {
    const json& doc = s["result"];
    evaluations += doc.value("search", json::object()).value("evaluations", std::size_t{0});
    search_s += doc.value("times", json::object()).value("wall_s", 0.0);
  }
  if (o.goal == Problem::Goal::throughput) table["throughput"] = throughput_choice(shapes, results);
  table["shape_search"] = {
      {"mode", o.shape_search}, {"evaluations", evaluations}, {"tune_s", search_s}};
  if (kernel.empty() || t.configs.empty()) {  // no shape was tuned: nothing to write
    table["files"] = json::array();
    if (print) std::cout << "\ndispatch table: none, no shape has a confirmed configuration\n";
    return table;
  }
  std::filesystem::path base =
      o.out.empty() ? tune::default_champion_path(problem, kernel) : std::filesystem::path(o.out);
  std::filesystem::path json_path = base.parent_path() / (kernel + ".dispatch.json");
  std::filesystem::path hpp_path = base.parent_path() / (kernel + ".dispatch.hpp");
  std::string provenance = "The dispatch table of kernel " + kernel + " of problem " + problem +
                           " over " + std::to_string(t.rows.size()) + " shapes, on " + device;
  auto w1 = write_text_atomic(json_path, table.dump(2) + "\n");
  std::string ident;
  for (char c : problem + "_" + kernel)
    ident += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  auto w2 = write_text_atomic(hpp_path, tune::dispatch_header(t, ident, provenance));
  table["files"] = {json_path.string(), hpp_path.string()};
  if (!w1 || !w2) table["files_error"] = (!w1 ? w1.error() : w2.error()).to_string();
  if (!print) return table;
  std::cout << fmt::format(
      "\ndispatch table: {} configuration(s) for {} shapes (each within {:.0f} % "
      "of its own best, among what each shape confirmed and every shape's champion measured "
      "there)\n",
      t.configs.size(), t.rows.size(), t.tolerance * 100);
  for (std::size_t i = 0; i < t.configs.size(); ++i) {
    std::string point;
    for (const auto& [k, v] : t.configs[i])
      point += (point.empty() ? "" : " ") + k + "=" + std::to_string(v);
    std::cout << fmt::format("  [{}] {}\n", i, point);
  }
  for (const auto& r : t.rows)
    std::cout << fmt::format(
        "  {:<28} {}\n", r.label,
        r.config < 0 ? std::string("nothing confirmed")
                     : fmt::format("[{}] {:.2f} us, {:+.1f} % over its best", r.config,
                                   r.seconds * 1e6, 100.0 * (r.seconds / r.best_s - 1)));
  std::cout << fmt::format("shape search: {}, {} evaluations over the shapes, {:.1f} s of tuning\n",
                           o.shape_search, evaluations, search_s);
  if (table.contains("throughput"))
    std::cout << table["throughput"].value("text", table["throughput"].value("note", "")) << "\n";
  std::cout << "written: " << json_path.string() << ", " << hpp_path.string() << "\n";
  return table;
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
