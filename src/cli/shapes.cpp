// check and bench at many shapes (problem/shape_set.hpp): the shapes' reports one after the
// other, then a summary over shapes — per kernel, a row per shape and best / typical / worst /
// geometric mean, as the skills report speedups over shapes.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "kopt/evaluate/bench.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/problem/shape_set.hpp"

namespace kopt::cli {
using nlohmann::json;

void add_axes(Command& c, ShapeFlags& flags) {
  c.options.push_back({.names = "--axis",
                       .help = "run at every value of a dim, NAME=V1,V2,... (repeatable: every "
                               "combination); default: kopt.toml's [axes] and [shapes]",
                       .target = &flags.axes});
  c.options.push_back({.names = "--zip",
                       .help = "axes that take their values together, M,N (the i-th of each) "
                               "instead of every combination (repeatable)",
                       .target = &flags.zips});
}

std::vector<std::optional<double>> measure_at_shape(
    ProblemSelection sel, const std::vector<std::pair<std::string, std::int64_t>>& dims,
    const std::vector<evaluate::Candidate>& candidates, double max_time_s) {
  std::vector<std::optional<double>> out(candidates.size());
  if (candidates.empty()) return out;
  for (const auto& [n, v] : dims) sel.dims.push_back(n + "=" + std::to_string(v));
  auto loaded = load_selection(sel);
  if (!loaded) return out;
  auto pool = evaluate::WorkerPool::open({device_family(), "", "", sel.device, false});
  if (!pool) return out;
  evaluate::EvaluatorOptions eo;
  eo.arch = sel.arch;
  eo.cache_root = cache_dir();
  evaluate::Evaluator ev(loaded->problem, (*pool)->contexts(), eo);
  auto report = ev.side_by_side(candidates, evaluate::Rigour::decide(max_time_s));
  if (!report || report->variants.size() != candidates.size()) return out;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (report->variants[i].status == VariantStatus::ok)
      out[i] = report->variants[i].summary.median;
  return out;
}

json stats_json(const OverShapes& o) {
  if (o.n == 0) return nullptr;
  return {{"best", o.best},
          {"typical", o.typical},
          {"worst", o.worst},
          {"geomean", o.geomean},
          {"n", o.n}};
}

std::vector<std::pair<std::string, std::int64_t>> shape_dims(const json& s) {
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::istringstream words(s.value("label", std::string()));
  for (std::string w; words >> w;) {
    std::string name = w.substr(0, w.find('='));
    dims.emplace_back(name, s["shape"][name].get<std::int64_t>());
  }
  return dims;
}

WeightedChoice weighted_choice(const std::vector<double>& weights,
                               const std::vector<std::vector<std::optional<double>>>& times) {
  WeightedChoice c;
  std::size_t candidates = 0;
  for (const auto& row : times) candidates = std::max(candidates, row.size());
  std::vector<double> sums(candidates, 0.0);
  std::vector<bool> everywhere(candidates, true);
  for (std::size_t i = 0; i < times.size(); ++i) {
    double own = 0;
    for (std::size_t j = 0; j < candidates; ++j) {
      std::optional<double> t = j < times[i].size() ? times[i][j] : std::nullopt;
      everywhere[j] = everywhere[j] && t.has_value();
      if (!t) continue;
      sums[j] += weights[i] * *t;
      own = own > 0 ? std::min(own, *t) : *t;
    }
    c.own_best_weighted_s += weights[i] * own;
  }
  for (std::size_t j = 0; j < candidates; ++j)
    if (everywhere[j] && (!c.best || sums[j] < sums[*c.best])) c.best = j;
  if (c.best) c.weighted_s = sums[*c.best];
  return c;
}

std::string shape_display(const json& s) {
  std::string name = s.value("name", ""), label = s.value("label", "");
  return name.empty() ? label : name + " (" + label + ")";
}

int run_over_shapes(const GlobalOptions& g, const std::string& command, ProblemSelection sel,
                    const ShapeFlags& flags, const ShapeRun& one, const ShapeSummary& summarize) {
  // A bare file is inferred once, at its own dims; each shape then overrides some of them.
  if (auto r = resolve_bare_files(sel); !r)
    return report_error(g, command, exit_code(r.error().kind), r.error().to_string());
  auto problem = load_problem(sel.problem);
  if (!problem) return one(sel, nullptr);  // the command says what is wrong, as it always does
  auto shapes = shape_set(*problem, flags.axes, flags.zips);
  if (!shapes)
    return report_error(g, command, exit_code(shapes.error().kind), shapes.error().to_string());
  if (shapes->empty()) return one(sel, nullptr);
  json list = json::array();
  int code = 0;
  for (const Shape& shape : *shapes) {
    ProblemSelection s = sel;
    json dims = json::object();
    for (const auto& [n, v] : shape.dims) {
      s.dims.push_back(n + "=" + std::to_string(v));
      dims[n] = v;
    }
    if (!g.json) std::cout << "\n== " << command << " at " << shape.display() << "\n";
    json doc;
    int rc = one(s, &doc);
    if (!g.json && doc.contains("error"))
      std::cout << "kopt " << command << ": " << doc["error"].get<std::string>() << "\n";
    code = std::max(code, rc);
    list.push_back({{"shape", dims},
                    {"label", shape.label()},
                    {"name", shape.name},
                    {"weight", goal_weight(*problem, shape)},
                    {"result", doc},
                    {"exit_code", rc}});
  }
  json summary = summarize(list, !g.json);
  if (g.json)
    std::cout << json{{"schema_version", 1}, {"command", command}, {"problem", problem->name},
                      {"shapes", list},      {"summary", summary}, {"exit_code", code}}
                     .dump(2)
              << "\n";
  return code;
}

namespace {

// The PyTorch rows of --vs-torch: "torch eager", "torch.compile", each with what it timed
// ("torch eager (reference())").
bool is_baseline(const std::string& kernel) {
  return evaluate::is_torch_eager_row(kernel) || kernel.rfind("torch.compile", 0) == 0;
}

std::string variant_name(const json& v) {
  std::string name = v.value("kernel", std::string("?"));
  const json params = v.value("params", json::object());
  for (const auto& [k, x] : params.items()) name += " " + k + "=" + x.dump();
  return name;
}

}  // namespace

json bench_summary(const json& shapes, bool print) {
  // Per variant (kernel and point, in first-seen order): its rows over shapes.
  std::vector<std::string> order;
  std::map<std::string, json> rows;
  for (const auto& s : shapes) {
    const json& r = s["result"];
    double eager = 0;
    for (const auto& v : r.value("variants", json::array()))
      if (evaluate::is_torch_eager_row(v.value("kernel", "")) && v.value("status", "") == "ok")
        eager = v["summary"].value("median", 0.0);
    for (const auto& v : r.value("variants", json::array())) {
      std::string name = variant_name(v);
      if (is_baseline(v.value("kernel", ""))) continue;
      if (!rows.count(name)) {
        order.push_back(name);
        rows[name] = json::array();
      }
      bool ok = v.value("status", "") == "ok";
      double median = ok ? v["summary"].value("median", 0.0) : 0.0;
      double sol =
          std::max(v.value("pct_bandwidth_ceiling", 0.0), v.value("pct_compute_ceiling", 0.0));
      rows[name].push_back(
          {{"shape", shape_display(s)},
           {"status", v.value("status", "")},
           {"median_s", ok ? json(median) : json(nullptr)},
           {"pct_sol", ok && sol > 0 ? json(sol) : json(nullptr)},
           {"speedup_vs_eager",
            ok && eager > 0 && median > 0 ? json(eager / median) : json(nullptr)}});
    }
  }
  json out = json::array();
  for (const auto& name : order) {
    std::vector<double> speedups, sols;
    for (const auto& row : rows[name]) {
      if (row["speedup_vs_eager"].is_number()) speedups.push_back(row["speedup_vs_eager"]);
      if (row["pct_sol"].is_number()) sols.push_back(row["pct_sol"]);
    }
    out.push_back({{"variant", name},
                   {"rows", rows[name]},
                   {"speedup_vs_eager", stats_json(over_shapes(speedups))},
                   {"pct_sol", stats_json(over_shapes(sols))}});
  }
  if (!print) return out;
  std::cout << fmt::format("\nover {} shapes:\n", shapes.size());
  for (const auto& v : out) {
    std::cout << "  " << v["variant"].get<std::string>() << "\n";
    std::cout << fmt::format("    {:<28} {:>12} {:>7} {:>9}\n", "shape", "median", "%SOL",
                             "vs eager");
    for (const auto& row : v["rows"]) {
      double m = row["median_s"].is_number() ? row["median_s"].get<double>() : 0.0;
      std::string median = m >= 1e-3 ? fmt::format("{:.3f} ms", m * 1e3)
                           : m > 0   ? fmt::format("{:.2f} us", m * 1e6)
                                     : row["status"].get<std::string>();
      std::string sol =
          row["pct_sol"].is_number() ? fmt::format("{:.1f}%", row["pct_sol"].get<double>()) : "-";
      std::string speed = row["speedup_vs_eager"].is_number()
                              ? fmt::format("{:.2f}x", row["speedup_vs_eager"].get<double>())
                              : "-";
      std::cout << fmt::format("    {:<28} {:>12} {:>7} {:>9}\n", row["shape"].get<std::string>(),
                               median, sol, speed);
    }
    auto line = [](const char* what, const json& st, const char* fmt_one) {
      if (st.is_null()) return;
      auto f = [&](const char* k) {
        return fmt::format(fmt::runtime(fmt_one), st[k].get<double>());
      };
      std::cout << fmt::format("    {}: best {} · typical {} · worst {} · geomean {} ({} shapes)\n",
                               what, f("best"), f("typical"), f("worst"), f("geomean"),
                               st["n"].get<std::size_t>());
    };
    line("vs eager", v["speedup_vs_eager"], "{:.2f}x");
    line("%SOL", v["pct_sol"], "{:.1f}%");
    if (v["speedup_vs_eager"].is_null())
      std::cout << "    vs eager: - (--vs-torch times torch eager at each shape)\n";
  }
  return out;
}

json check_summary(const json& shapes, bool print) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<json, json>> by_kernel;  // passed at, failed at
  for (const auto& s : shapes)
    for (const auto& k : s["result"].value("kernels", json::array())) {
      std::string name = k.value("kernel", std::string("?"));
      if (!by_kernel.count(name)) {
        order.push_back(name);
        by_kernel[name] = {json::array(), json::array()};
      }
      bool passed = k.value("status", "") == "passed";
      (passed ? by_kernel[name].first : by_kernel[name].second)
          .push_back(passed ? json(shape_display(s))
                            : json{{"shape", shape_display(s)}, {"status", k["status"]}});
    }
  json out = json::array();
  for (const auto& name : order)
    out.push_back({{"kernel", name},
                   {"passed_at", by_kernel[name].first},
                   {"failed_at", by_kernel[name].second}});
  if (!print) return out;
  std::cout << fmt::format("\nover {} shapes:\n", shapes.size());
  for (const auto& k : out) {
    std::cout << fmt::format("  {:<16} passed at {} of {} shapes", k["kernel"].get<std::string>(),
                             k["passed_at"].size(), k["passed_at"].size() + k["failed_at"].size());
    if (!k["failed_at"].empty()) {
      std::cout << "; failed at";
      for (const auto& f : k["failed_at"])
        std::cout << " " << f["shape"].get<std::string>() << " (" << f["status"].get<std::string>()
                  << ")";
    }
    std::cout << "\n";
  }
  for (const auto& s : shapes)
    if (s["result"].contains("error"))
      std::cout << "  at " << shape_display(s) << ": " << s["result"]["error"].get<std::string>()
                << "\n";
  return out;
}

}  // namespace kopt::cli
