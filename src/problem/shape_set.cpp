#include "kopt/problem/shape_set.hpp"

#include <algorithm>
#include <cmath>

namespace kopt {

std::string Shape::label() const {
  std::string out;
  for (const auto& [n, v] : dims) out += (out.empty() ? "" : " ") + n + "=" + std::to_string(v);
  return out;
}

std::string Shape::display() const {
  return name.empty() ? label() : name + " (" + label() + ")";
}

double goal_weight(const Problem& p, const Shape& s) {
  if (auto it = p.goal_weights.find(s.name); !s.name.empty() && it != p.goal_weights.end())
    return it->second;
  auto it = p.goal_weights.find(s.label());
  return it == p.goal_weights.end() ? 1.0 : it->second;
}

namespace {

using Axes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

// The zips of --zip flags ("M,N"), each naming axes of `axes` of one length.
Expected<std::vector<std::vector<std::string>>> parse_zips(const std::vector<std::string>& flags,
                                                           const Axes& axes) {
  std::vector<std::vector<std::string>> out;
  for (const auto& flag : flags) {
    std::vector<std::string> names;
    std::size_t start = 0, length = 0;
    while (start <= flag.size()) {
      std::size_t comma = std::min(flag.find(',', start), flag.size());
      std::string name = flag.substr(start, comma - start);
      auto a =
          std::find_if(axes.begin(), axes.end(), [&](const auto& x) { return x.first == name; });
      if (a == axes.end())
        return Unexpected(
            bad_input("--zip " + flag + ": " + name + " is no axis given", "", 0, "--zip"));
      if (length && a->second.size() != length)
        return Unexpected(bad_input("--zip " + flag +
                                        ": zipped axes take their values together, and " + name +
                                        " has " + std::to_string(a->second.size()) +
                                        " values, the axis before it " + std::to_string(length),
                                    "", 0, "--zip"));
      length = a->second.size();
      names.push_back(name);
      start = comma + 1;
    }
    if (names.size() < 2)
      return Unexpected(
          bad_input("--zip " + flag + ": expected two axes or more, M,N", "", 0, "--zip"));
    out.push_back(std::move(names));
  }
  return out;
}

// Every combination of the factors: a single axis, or a zip of axes taking their values at once.
std::vector<Shape> product(const Axes& axes, const std::vector<std::vector<std::string>>& zips) {
  std::vector<std::vector<std::vector<std::pair<std::string, std::int64_t>>>> factors;
  std::vector<std::string> done;
  for (const auto& [name, values] : axes) {
    if (std::find(done.begin(), done.end(), name) != done.end()) continue;
    auto zip = std::find_if(zips.begin(), zips.end(), [&](const auto& z) {
      return std::find(z.begin(), z.end(), name) != z.end();
    });
    std::vector<std::string> group = zip == zips.end() ? std::vector<std::string>{name} : *zip;
    std::vector<std::vector<std::pair<std::string, std::int64_t>>> factor(values.size());
    for (const auto& member : group) {
      const auto& vs = std::find_if(axes.begin(), axes.end(), [&](const auto& x) {
                         return x.first == member;
                       })->second;
      for (std::size_t i = 0; i < factor.size(); ++i) factor[i].emplace_back(member, vs[i]);
      done.push_back(member);
    }
    factors.push_back(std::move(factor));
  }
  std::vector<Shape> out;
  if (factors.empty()) return out;
  out.push_back({});
  for (const auto& factor : factors) {
    std::vector<Shape> next;
    for (const auto& s : out)
      for (const auto& assignment : factor) {
        Shape t = s;
        t.dims.insert(t.dims.end(), assignment.begin(), assignment.end());
        next.push_back(std::move(t));
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace

Expected<std::vector<Shape>> shape_set(const Problem& p, const std::vector<std::string>& axis_flags,
                                       const std::vector<std::string>& zip_flags) {
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
  const bool from_flags = !axes.empty();
  if (!from_flags) axes = p.axes;
  auto zips = parse_zips(zip_flags, axes);
  if (!zips) return Unexpected(zips.error());
  if (!from_flags && zip_flags.empty()) *zips = p.axis_zips;
  std::vector<Shape> out = product(axes, *zips);
  if (!from_flags)
    for (const auto& named : p.shapes) out.push_back({named.name, named.dims});
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
