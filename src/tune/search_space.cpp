#include "kopt/tune/search_space.hpp"

#include <algorithm>
#include <limits>

namespace kopt::tune {

SearchSpace SearchSpace::from_kernel(const KernelSpec& kernel, const Scope& dims) {
  SearchSpace s;
  for (const auto& p : kernel.params) s.params.emplace_back(p.name, p.values);
  s.feasible = [&kernel, dims](const ParamPoint& point) {
    auto v = violated_constraint(kernel, dims, point);
    return v && *v == nullptr;
  };
  return s;
}

std::uint64_t SearchSpace::size() const {
  std::uint64_t n = 1;
  for (const auto& [name, values] : params) {
    if (values.empty()) return 0;
    if (n > std::numeric_limits<std::uint64_t>::max() / values.size())
      return std::numeric_limits<std::uint64_t>::max();
    n *= values.size();
  }
  return n;
}

ParamPoint SearchSpace::point(const PointIndex& index) const {
  ParamPoint p;
  for (std::size_t i = 0; i < params.size(); ++i) p[params[i].first] = params[i].second[index[i]];
  return p;
}

PointIndex SearchSpace::index_of(const ParamPoint& point) const {
  PointIndex idx;
  for (const auto& [name, values] : params) {
    auto it = point.find(name);
    if (it == point.end()) return {};
    auto v = std::find(values.begin(), values.end(), it->second);
    if (v == values.end()) return {};
    idx.push_back(static_cast<std::size_t>(v - values.begin()));
  }
  return idx;
}

std::vector<PointIndex> SearchSpace::neighbours(const PointIndex& index) const {
  std::vector<PointIndex> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (index[i] > 0) {
      PointIndex n = index;
      --n[i];
      out.push_back(n);
    }
    if (index[i] + 1 < params[i].second.size()) {
      PointIndex n = index;
      ++n[i];
      out.push_back(n);
    }
  }
  return out;
}

PointIndex SearchSpace::random_index(std::mt19937_64& rng) const {
  PointIndex idx;
  for (const auto& [name, values] : params)
    idx.push_back(std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng));
  return idx;
}

std::vector<ParamPoint> SearchSpace::sample(std::size_t n, std::mt19937_64& rng,
                                            const std::vector<ParamPoint>& exclude) const {
  std::vector<ParamPoint> out;
  std::uint64_t total = size();
  for (std::size_t tries = 0;
       out.size() < n && tries < 50 * n + 100 && out.size() + exclude.size() < total; ++tries) {
    ParamPoint p = point(random_index(rng));
    if (std::find(out.begin(), out.end(), p) != out.end() ||
        std::find(exclude.begin(), exclude.end(), p) != exclude.end())
      continue;
    if (feasible(p)) out.push_back(std::move(p));
  }
  return out;
}

std::optional<ParamPoint> SearchSpace::nearest_feasible(const ParamPoint& p,
                                                        const std::string& keep) const {
  auto r = repairs(p, keep);
  if (r.empty()) return std::nullopt;
  return r.front();
}

std::vector<ParamPoint> SearchSpace::repairs(const ParamPoint& p, const std::string& keep) const {
  if (feasible(p)) return {p};
  std::vector<ParamPoint> out;
  for (const auto& [name, values] : params)
    for (std::int64_t v : values) {
      if (name == keep || (p.contains(name) && p.at(name) == v)) continue;
      ParamPoint q = p;
      q[name] = v;
      if (feasible(q)) out.push_back(std::move(q));
    }
  return out;
}

}  // namespace kopt::tune
