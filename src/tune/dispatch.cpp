#include "kopt/tune/dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace kopt::tune {

DispatchTable dispatch_table(const std::vector<ShapeResults>& shapes, double tolerance) {
  DispatchTable t;
  t.tolerance = tolerance;
  std::vector<double> best(shapes.size(), 0);
  std::vector<ParamPoint> points;  // every point confirmed at some shape
  for (std::size_t s = 0; s < shapes.size(); ++s)
    for (const auto& [p, sec] : shapes[s].measured) {
      if (sec <= 0) continue;
      if (best[s] == 0 || sec < best[s]) best[s] = sec;
      if (std::find(points.begin(), points.end(), p) == points.end()) points.push_back(p);
    }
  auto time_at = [&](std::size_t s, const ParamPoint& p) {
    for (const auto& [q, sec] : shapes[s].measured)
      if (q == p && sec > 0) return sec;
    return 0.0;
  };
  auto covers = [&](std::size_t s, const ParamPoint& p) {
    double sec = time_at(s, p);
    return sec > 0 && sec <= (1 + tolerance) * best[s];
  };
  std::set<std::size_t> uncovered;
  for (std::size_t s = 0; s < shapes.size(); ++s)
    if (best[s] > 0) uncovered.insert(s);
  while (!uncovered.empty()) {
    int pick = -1;
    std::size_t most = 0;
    double pick_mean = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < points.size(); ++i) {
      std::size_t n = 0;
      double logs = 0;
      int measured = 0;
      for (std::size_t s = 0; s < shapes.size(); ++s) {
        if (uncovered.count(s) && covers(s, points[i])) ++n;
        if (double sec = time_at(s, points[i]); sec > 0) {
          logs += std::log(sec / best[s]);
          ++measured;
        }
      }
      double mean = measured ? logs / measured : 0;
      if (n > most || (n == most && n > 0 && mean < pick_mean)) {
        pick = static_cast<int>(i);
        most = n;
        pick_mean = mean;
      }
    }
    if (pick < 0) break;  // cannot happen: each shape's own best covers it
    t.configs.push_back(points[pick]);
    for (auto it = uncovered.begin(); it != uncovered.end();)
      it = covers(*it, points[pick]) ? uncovered.erase(it) : std::next(it);
  }
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    DispatchTable::Row row;
    row.label = shapes[s].label;
    row.dims = shapes[s].dims;
    row.best_s = best[s];
    for (std::size_t c = 0; c < t.configs.size(); ++c) {
      double sec = time_at(s, t.configs[c]);
      if (sec > 0 && (row.config < 0 || sec < row.seconds)) {
        row.config = static_cast<int>(c);
        row.seconds = sec;
      }
    }
    row.within = row.config >= 0 && row.seconds <= (1 + tolerance) * best[s];
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string dispatch_header(const DispatchTable& t, const std::string& name,
                            const std::string& provenance) {
  std::vector<std::string> params, dims;
  if (!t.configs.empty())
    for (const auto& [k, v] : t.configs.front()) params.push_back(k);
  if (!t.rows.empty())
    for (const auto& [k, v] : t.rows.front().dims) dims.push_back(k);
  std::string h =
      "// " + provenance + "\n// Written by kopt tune --axis: do not edit; tune again.\n";
  h += "#pragma once\n#include <cmath>\n\nnamespace kopt_dispatch {\n\n";
  h += "struct " + name + "_config {\n";
  for (const auto& p : params) h += "  long long " + p + ";\n";
  h += "};\n\n";
  std::string args;
  for (const auto& d : dims) args += (args.empty() ? "" : ", ") + std::string("long long ") + d;
  h += "// The configuration of the shape with these dims, else of the nearest measured one.\n";
  h += "inline " + name + "_config " + name + "_select(" + args + ") {\n";
  h += "  static const " + name + "_config kopt_configs[] = {\n";
  for (const auto& c : t.configs) {
    std::string vals;
    for (const auto& p : params) vals += (vals.empty() ? "" : ", ") + std::to_string(c.at(p));
    h += "      {" + vals + "},\n";
  }
  h += "  };\n  struct KoptRow {\n";
  for (const auto& d : dims) h += "    long long " + d + ";\n";
  h += "    int config;\n  };\n  static const KoptRow kopt_rows[] = {\n";
  for (const auto& r : t.rows) {
    if (r.config < 0) continue;
    std::string vals;
    for (const auto& [k, v] : r.dims) vals += std::to_string(v) + ", ";
    h += fmt::format("      {{{}{}}},  // {}: {:.3g} us ({:.1f} % over its best)\n", vals, r.config,
                     r.label, r.seconds * 1e6, 100.0 * (r.seconds / r.best_s - 1));
  }
  h += "  };\n  int kopt_best = 0;\n  double kopt_best_d = 1e300;\n";
  h += "  for (int i = 0; i < (int)(sizeof(kopt_rows) / sizeof(kopt_rows[0])); ++i) {\n"
       "    double d = 0;\n";
  for (const auto& d : dims)
    h += "    d += std::fabs(std::log((double)" + d + " / (double)kopt_rows[i]." + d + "));\n";
  h += "    if (d < kopt_best_d) {\n      kopt_best_d = d;\n      kopt_best = i;\n    }\n  }\n";
  h += "  return kopt_configs[kopt_rows[kopt_best].config];\n}\n\n}  // namespace kopt_dispatch\n";
  return h;
}

}  // namespace kopt::tune
