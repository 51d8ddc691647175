#include "kopt/problem/shape_set.hpp"

#include <algorithm>
#include <cmath>

namespace kopt {

std::string Shape::label() const {
  std::string out;
  for (const auto& [n, v] : dims) out += (out.empty() ? "" : " ") + n + "=" + std::to_string(v);
  return out;
}

Expected<std::vector<Shape>> shape_set(const Problem& p,
                                       const std::vector<std::string>& axis_flags) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> axes;
  for (const auto& flag : axis_flags) {
    auto eq = flag.find('=');
    std::string name = flag.substr(0, eq);
    if (eq == std::string::npos || name.empty())
      return Unexpected(bad_input("--axis " + flag + ": expected NAME=V1,V2,...", "", 0, "--axis"));
    if (std::none_of(p.dims.begin(), p.dims.end(), [&](const Dim& d) { return d.name == name; }))
      return Unexpected(bad_input("--axis " + flag + ": " + name + " is no dim of the problem",
                                  p.spec_path.string(), 0, "--axis"));
    if (std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return a.first == name; }))
      return Unexpected(bad_input("--axis " + name + " is given twice", "", 0, "--axis"));
    std::vector<std::int64_t> values;
    std::string list = flag.substr(eq + 1);
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string item = list.substr(start, comma - start);
      try {
        std::size_t used = 0;
        long long v = std::stoll(item, &used, 0);
        if (used != item.size() || v <= 0) throw std::invalid_argument(item);
        values.push_back(v);
      } catch (const std::exception&) {
        return Unexpected(
            bad_input("--axis " + flag + ": '" + item + "' is no integer > 0", "", 0, "--axis"));
      }
      start = comma + 1;
    }
    axes.emplace_back(name, std::move(values));
  }
  if (axes.empty()) axes = p.axes;
  std::vector<Shape> out;
  if (axes.empty()) return out;
  out.push_back({});
  for (const auto& [name, values] : axes) {
    std::vector<Shape> next;
    for (const auto& s : out)
      for (std::int64_t v : values) {
        Shape t = s;
        t.dims.emplace_back(name, v);
        next.push_back(std::move(t));
      }
    out = std::move(next);
  }
  return out;
}

OverShapes over_shapes(std::vector<double> values, bool higher_is_better) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !(v > 0); }),
               values.end());
  OverShapes o;
  o.n = values.size();
  if (values.empty()) return o;
  std::sort(values.begin(), values.end());
  o.best = higher_is_better ? values.back() : values.front();
  o.worst = higher_is_better ? values.front() : values.back();
  std::size_t n = values.size();
  o.typical = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  double logs = 0;
  for (double v : values) logs += std::log(v);
  o.geomean = std::exp(logs / static_cast<double>(n));
  return o;
}

}  // namespace kopt
