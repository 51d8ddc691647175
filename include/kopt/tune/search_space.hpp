#pragma once
// A parameter space as search strategies see it: ordered params, each a list of values,
// points addressed by one index per param, and the declared constraints.
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kopt/problem/param_space.hpp"

namespace kopt::tune {

using PointIndex = std::vector<std::size_t>;  // one value index per param

struct SearchSpace {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> params;
  std::function<bool(const ParamPoint&)> feasible = [](const ParamPoint&) { return true; };

  // A kernel's params with its constraints evaluated at `dims`.
  static SearchSpace from_kernel(const KernelSpec& kernel, const Scope& dims);

  // The params named in `values` held at those values (kopt tune's --set, the loop's method
  // params); the others keep their declared values.
  template <class Values>
  void hold(const Values& values) {
    for (auto& [name, declared] : params)
      if (auto it = values.find(name); it != values.end()) declared = {it->second};
  }

  std::uint64_t size() const;  // the full product, before constraints
  ParamPoint point(const PointIndex& index) const;
  // The index of a point whose values are all declared; empty when one is not.
  PointIndex index_of(const ParamPoint& point) const;
  // The points one step away: one param moved to the next or previous value.
  std::vector<PointIndex> neighbours(const PointIndex& index) const;
  PointIndex random_index(std::mt19937_64& rng) const;
  // Up to n distinct feasible points drawn at random, none of `exclude` (what the random
  // strategy draws, and how the optimization loop varies its branches).
  std::vector<ParamPoint> sample(std::size_t n, std::mt19937_64& rng,
                                 const std::vector<ParamPoint>& exclude = {}) const;
  // `p` when it is feasible, else the first feasible point that differs from it in one param
  // (params in declared order, each one's values in declared order), `keep` left as it is (a
  // move being repaired); nullopt when none does.
  std::optional<ParamPoint> nearest_feasible(const ParamPoint& p,
                                             const std::string& keep = "") const;
  // Every feasible point one param away from `p` (`keep` fixed), or `p` when it is feasible.
  std::vector<ParamPoint> repairs(const ParamPoint& p, const std::string& keep) const;
};

}  // namespace kopt::tune
