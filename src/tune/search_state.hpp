#pragma once
// The evaluator every search strategy shares (search.cpp): the cost cache, the budgets, batches
// handed to the objective, progress, and the hidden constraints learned from failures.
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kopt/tune/search.hpp"

namespace kopt::tune::search_detail {

constexpr double k_inf = std::numeric_limits<double>::infinity();

// Evaluates points for every strategy: cache, budget, progress, hidden constraints.
class Evaluator {
 public:
  Evaluator(const SearchSpace& space, const BatchObjective& objective, const SearchOptions& options,
            SearchResult& result)
      : m_space(space),
        m_objective(objective),
        m_options(options),
        m_result(result),
        m_start(std::chrono::steady_clock::now()) {}

  // The point's cost (infinite when it failed, is infeasible or learned to fail); nullopt
  // once the budget is spent.
  std::optional<double> cost(const PointIndex& index) { return costs({index}).at(0); }

  // Each point's cost, the unseen ones evaluated together in one batch (as many as the
  // evaluation budget allows; the rest nullopt, as is every point once the budget is spent).
  std::vector<std::optional<double>> costs(const std::vector<PointIndex>& indices) {
    std::vector<std::optional<double>> out(indices.size());
    std::vector<std::size_t> todo;
    std::vector<ParamPoint> points;
    std::set<PointIndex> queued;
    const bool stop = stopped();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      if (auto it = m_cost.find(indices[i]); it != m_cost.end()) {
        out[i] = it->second;
        continue;
      }
      if (stop) continue;
      if (!admissible(indices[i])) {
        out[i] = k_inf;
        continue;
      }
      if (queued.count(indices[i])) continue;  // filled in below
      if (todo.size() >= remaining()) continue;
      queued.insert(indices[i]);
      todo.push_back(i);
      points.push_back(m_space.point(indices[i]));
    }
    if (todo.empty()) return out;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Evaluation> evals = m_objective(points);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t j = 0; j < todo.size(); ++j) {
      Evaluation e = j < evals.size() ? std::move(evals[j]) : Evaluation{};
      if (j >= evals.size()) e.failure = "the objective returned no evaluation";
      e.point = points[j];
      if (e.wall_s <= 0) e.wall_s = wall / double(todo.size());
      m_result.history.push_back(e);
      learn(e);
      if (e.ok && (!m_result.best || e.cost < m_result.best->cost)) m_result.best = e;
      m_cost[indices[todo[j]]] = e.ok ? e.cost : k_inf;
    }
    for (std::size_t i = 0; i < indices.size(); ++i)
      if (!out[i])
        if (auto it = m_cost.find(indices[i]); it != m_cost.end()) out[i] = it->second;
    report();
    return out;
  }

  // Not seen yet, feasible and not learned to fail: worth an evaluation. An inadmissible
  // point is seen from now on, at an infinite cost.
  bool admissible(const PointIndex& index) {
    if (m_cost.contains(index)) return false;
    ParamPoint point = m_space.point(index);
    if (!m_space.feasible(point)) {
      ++m_result.skipped_infeasible;
      m_cost[index] = k_inf;
      return false;
    }
    if (forbidden(point)) {
      ++m_result.skipped_learned;
      m_cost[index] = k_inf;
      return false;
    }
    return true;
  }

  bool seen(const PointIndex& index) const { return m_cost.contains(index); }
  // Evaluations left in the budget.
  std::size_t remaining() const {
    return m_options.budget.max_evaluations -
           std::min(m_options.budget.max_evaluations, m_result.history.size());
  }
  std::size_t seen_count() const { return m_cost.size(); }

  bool stopped() {
    if (m_result.history.size() >= m_options.budget.max_evaluations) {
      m_result.stop_reason = "evaluation budget";
      return true;
    }
    if (m_options.budget.max_wall_s > 0 && elapsed() >= m_options.budget.max_wall_s) {
      m_result.stop_reason = "time budget";
      return true;
    }
    return false;
  }

  // Budget spent, for strategies whose loops should end: as a fraction in [0, 1].
  double spent() const {
    double by_evals = double(m_result.history.size()) /
                      double(std::max<std::size_t>(1, m_options.budget.max_evaluations));
    double by_time =
        m_options.budget.max_wall_s > 0 ? elapsed() / m_options.budget.max_wall_s : 0.0;
    return std::min(1.0, std::max(by_evals, by_time));
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  }

  // A value is a hidden constraint when it failed twice or more, never succeeded, and its
  // failures cover two values of every other param (so no other value is to blame).
  void learn(const Evaluation& e) {
    for (const auto& [param, value] : e.point) {
      auto& s = m_stats[{param, value}];
      if (e.ok) {
        ++s.ok;
        continue;
      }
      ++s.failures;
      if (s.example.empty()) s.example = e.failure;
      for (const auto& [other, v] : e.point)
        if (other != param) s.others[other].insert(v);
    }
    if (e.ok) return;
    for (const auto& [param, value] : e.point) {
      auto key = std::make_pair(param, value);
      const auto& s = m_stats[key];
      if (m_forbidden.contains(key) || s.ok > 0 || s.failures < 2) continue;
      bool spans = true;
      for (const auto& [other, values] : m_space.params)
        if (other != param && values.size() > 1)
          spans = spans && s.others.count(other) && s.others.at(other).size() >= 2;
      if (!spans) continue;
      m_forbidden.insert(key);
      m_result.learned.push_back(HiddenConstraint{param, value, s.failures, s.example});
    }
  }

  bool forbidden(const ParamPoint& p) const {
    for (const auto& [param, value] : p)
      if (m_forbidden.contains({param, value})) return true;
    return false;
  }

  void report() {
    SearchProgress p;
    p.evaluations = m_result.history.size();
    p.budget = m_options.budget.max_evaluations;
    p.best = m_result.best;
    p.elapsed_s = elapsed();
    if (m_options.budget.max_wall_s > 0)
      p.time_left_s = std::max(0.0, m_options.budget.max_wall_s - p.elapsed_s);
    m_options.progress(p);
  }

  struct ValueStats {
    std::size_t ok = 0, failures = 0;
    std::string example;
    std::map<std::string, std::set<std::int64_t>> others;
  };
  const SearchSpace& m_space;
  const BatchObjective& m_objective;
  const SearchOptions& m_options;
  SearchResult& m_result;
  std::chrono::steady_clock::time_point m_start;
  std::map<PointIndex, double> m_cost;
  std::map<std::pair<std::string, std::int64_t>, ValueStats> m_stats;
  std::set<std::pair<std::string, std::int64_t>> m_forbidden;
};

}  // namespace kopt::tune::search_detail
