// kopt tune over several shapes: a shape's search started from the shapes tuned before it, each
// shape's champion measured at the others, and the dispatch table (and [goal] throughput's one
// configuration) over all of them.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "kopt/tune/champion_file.hpp"
#include "kopt/tune/dispatch.hpp"
#include "tune_cli.hpp"

namespace kopt::cli {
namespace {

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

}  // namespace

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

}  // namespace kopt::cli
