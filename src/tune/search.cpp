#include "kopt/tune/search.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "search_state.hpp"

namespace kopt::tune {
namespace {

using search_detail::Evaluator;
using search_detail::k_inf;

class Strategies {
 public:
  Strategies(const SearchSpace& space, Evaluator& ev, const SearchOptions& o, SearchResult& r)
      : m_space(space), m_ev(ev), m_o(o), m_r(r), m_rng(o.seed) {}

  void run() {
    // Exhaustive and random search take the start points into their first batch; the others
    // evaluate them first, one at a time.
    const bool batched = batch() > 1 && (m_o.strategy == SearchStrategy::exhaustive ||
                                         m_o.strategy == SearchStrategy::random);
    for (const auto& p : m_o.start)
      if (auto idx = m_space.index_of(p); !idx.empty()) {
        if (!batched) {
          if (!m_ev.cost(idx)) return;
        } else if (!m_first.count(idx) && m_ev.admissible(idx)) {
          m_first.insert(idx);
          m_first_order.push_back(idx);
        }
      }
    if (m_space.size() == 0) {
      m_r.stop_reason = "space exhausted";
      return;
    }
    switch (m_o.strategy) {
      case SearchStrategy::exhaustive:
        return exhaustive();
      case SearchStrategy::random:
        return random();
      case SearchStrategy::local:
        return local();
      case SearchStrategy::annealing:
        return annealing();
      case SearchStrategy::genetic:
        return genetic();
    }
  }

 private:
  std::size_t batch() const { return std::max<std::size_t>(1, m_o.batch); }

  // The start points, once, at the head of the first batch.
  std::vector<PointIndex> take_first() { return std::exchange(m_first_order, {}); }

  // Every point in order, `batch` admissible ones at a time; the next batch is announced
  // (prefetch) before this one is evaluated.
  void exhaustive() {
    PointIndex idx(m_space.params.size(), 0);
    bool more = !idx.empty();
    auto collect = [&] {
      std::vector<PointIndex> chunk = take_first();
      while (more && chunk.size() < batch()) {
        if (!m_first.count(idx) && m_ev.admissible(idx)) chunk.push_back(idx);
        more = next_index(idx);
      }
      return chunk;
    };
    if (run_batches(collect)) m_r.stop_reason = "space exhausted";
  }

  static constexpr std::size_t k_lookahead = 4;  // batches announced ahead of the one evaluated

  // Evaluates the batches `collect` gives, in order, announcing (prefetch) up to k_lookahead
  // batches ahead, none past the evaluation budget; `evaluated` is told each batch done.
  // False when the budget ended the search.
  template <class Collect>
  bool run_batches(Collect collect,
                   const std::function<void(const std::vector<PointIndex>&)>& evaluated = {}) {
    std::deque<std::vector<PointIndex>> ahead;
    std::size_t queued = 0;  // points in `ahead`
    auto fill = [&] {
      while (ahead.size() <= k_lookahead) {
        std::vector<PointIndex> c = collect();
        if (c.empty()) return;
        if (!ahead.empty() && m_o.prefetch && queued < m_ev.remaining()) {
          std::vector<ParamPoint> points;
          for (const auto& i : c) points.push_back(m_space.point(i));
          m_o.prefetch(points);
        }
        queued += c.size();
        ahead.push_back(std::move(c));
      }
    };
    fill();
    while (!ahead.empty()) {
      std::vector<PointIndex> chunk = std::move(ahead.front());
      ahead.pop_front();
      queued -= chunk.size();
      fill();
      if (!evaluate_all(chunk)) return false;
      if (evaluated) evaluated(chunk);
    }
    return true;
  }

  // False once the budget ended the search.
  bool evaluate_all(const std::vector<PointIndex>& chunk) {
    auto c = m_ev.costs(chunk);
    return std::none_of(c.begin(), c.end(), [](const auto& x) { return !x; });
  }

  // The next index in odometer order; false after the last.
  bool next_index(PointIndex& idx) const {
    for (std::size_t i = idx.size(); i > 0; --i) {
      if (++idx[i - 1] < m_space.params[i - 1].second.size()) return true;
      idx[i - 1] = 0;
    }
    return false;
  }

  PointIndex random_index() { return m_space.random_index(m_rng); }

  // A point not seen yet (nor in `also_seen`), or empty when the space looks exhausted.
  PointIndex fresh_index(const std::set<PointIndex>& also_seen = {}) {
    if (m_ev.seen_count() + also_seen.size() >= m_space.size()) return {};
    for (int tries = 0; tries < 1000; ++tries) {
      PointIndex idx = random_index();
      if (!m_ev.seen(idx) && !also_seen.count(idx)) return idx;
    }
    return {};
  }

  bool exhausted(const PointIndex& idx) {
    if (!idx.empty()) return false;
    if (m_r.stop_reason.empty())
      m_r.stop_reason = m_ev.seen_count() >= m_space.size() ? "space exhausted" : "converged";
    return true;
  }

  void random() {
    std::set<PointIndex> drawn;
    for (const auto& i : m_first) drawn.insert(i);
    auto collect = [&] {
      std::vector<PointIndex> chunk = take_first();
      while (chunk.size() < batch()) {
        PointIndex idx = fresh_index(drawn);
        if (idx.empty()) break;
        if (!m_ev.admissible(idx)) continue;  // seen from now on
        drawn.insert(idx);
        chunk.push_back(idx);
      }
      return chunk;
    };
    // `drawn`: points drawn and not evaluated yet (this batch and those ahead).
    if (run_batches(collect, [&](const std::vector<PointIndex>& done) {
          for (const auto& i : done) drawn.erase(i);
        }))
      exhausted({});
  }

  // Multi-start hill climbing: move to the best neighbour while it improves, then restart. With
  // climbs_from_start, the climbs start from the best start points instead and the search ends
  // when they have all reached their optimum ("converged").
  void local() {
    if (m_o.climbs_from_start > 0) {
      std::vector<std::pair<double, PointIndex>> from;
      for (const auto& p : m_o.start)
        if (auto idx = m_space.index_of(p); !idx.empty()) {
          auto c = m_ev.cost(idx);  // evaluated first (run()): known, no budget spent
          if (!c) return;
          if (std::isfinite(*c) && std::none_of(from.begin(), from.end(),
                                                [&](const auto& f) { return f.second == idx; }))
            from.emplace_back(*c, idx);
        }
      std::sort(from.begin(), from.end());
      for (std::size_t i = 0; i < std::min(from.size(), m_o.climbs_from_start); ++i)
        if (!climb(from[i].second, from[i].first)) return;
      m_r.stop_reason = "converged";
      return;
    }
    while (true) {
      PointIndex cur = fresh_index();
      if (exhausted(cur)) return;
      auto c = m_ev.cost(cur);
      if (!c || !climb(cur, *c)) return;
    }
  }

  // Moves from `cur` (cost c) to the best neighbour while it improves; false once the budget
  // ended the search.
  bool climb(PointIndex cur, double c) {
    while (std::isfinite(c)) {
      PointIndex best_n;
      double best_c = c;
      auto ns = m_space.neighbours(cur);
      auto ncs = m_ev.costs(ns);  // the neighbours as one batch
      for (std::size_t i = 0; i < ns.size(); ++i) {
        if (!ncs[i]) return false;
        if (*ncs[i] < best_c) {
          best_c = *ncs[i];
          best_n = ns[i];
        }
      }
      if (best_n.empty()) return true;  // a local optimum
      cur = best_n;
      c = best_c;
    }
    return true;
  }

  // Simulated annealing on relative cost differences, cooling with the budget spent.
  void annealing() {
    constexpr double t_start = 0.3, t_end = 0.003;
    PointIndex cur;
    double cur_c = k_inf;
    std::size_t idle = 0;
    std::uniform_real_distribution<double> u(0, 1);
    while (idle < 2000) {
      if (!std::isfinite(cur_c)) {
        cur = fresh_index();
        if (exhausted(cur)) return;
        auto c = m_ev.cost(cur);
        if (!c) return;
        cur_c = *c;
        continue;
      }
      auto ns = m_space.neighbours(cur);
      if (ns.empty()) {  // one point in all
        m_r.stop_reason = "space exhausted";
        return;
      }
      const PointIndex& n = ns[std::uniform_int_distribution<std::size_t>(0, ns.size() - 1)(m_rng)];
      bool was_seen = m_ev.seen(n);
      auto c = m_ev.cost(n);
      if (!c) return;
      idle = was_seen ? idle + 1 : 0;
      if (!std::isfinite(*c)) continue;
      double t = t_start * std::pow(t_end / t_start, m_ev.spent());
      double delta = *c / cur_c - 1.0;
      if (delta < 0 || u(m_rng) < std::exp(-delta / t)) {
        cur = n;
        cur_c = *c;
      }
      if (was_seen && idle % 50 == 49) cur_c = k_inf;  // stuck among seen points: jump
    }
    m_r.stop_reason = "converged";
  }

  // A small genetic algorithm: tournament selection, uniform crossover, ±1-step mutation,
  // the best individual always kept.
  void genetic() {
    const std::size_t pop_size = 12;
    std::vector<std::pair<PointIndex, double>> pop;
    std::vector<PointIndex> first;
    std::set<PointIndex> drawn;
    for (std::size_t i = 0; i < pop_size; ++i) {
      PointIndex idx = fresh_index(drawn);
      if (idx.empty()) break;
      drawn.insert(idx);
      first.push_back(idx);
    }
    auto first_costs = m_ev.costs(first);
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (!first_costs[i]) return;
      pop.emplace_back(first[i], *first_costs[i]);
    }
    if (exhausted(pop.empty() ? PointIndex{} : pop[0].first)) return;
    std::uniform_real_distribution<double> u(0, 1);
    std::size_t idle = 0;
    while (idle < 2000) {
      std::sort(pop.begin(), pop.end(), [](auto& a, auto& b) { return a.second < b.second; });
      std::vector<std::pair<PointIndex, double>> next{pop[0]};
      auto pick = [&]() -> const PointIndex& {
        auto& a = pop[std::uniform_int_distribution<std::size_t>(0, pop.size() - 1)(m_rng)];
        auto& b = pop[std::uniform_int_distribution<std::size_t>(0, pop.size() - 1)(m_rng)];
        return a.second <= b.second ? a.first : b.first;
      };
      std::vector<PointIndex> children;
      while (next.size() + children.size() < pop.size()) {
        const PointIndex &a = pick(), &b = pick();
        PointIndex child(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          child[i] = u(m_rng) < 0.5 ? a[i] : b[i];
          if (u(m_rng) < 1.0 / double(a.size())) {
            std::size_t n = m_space.params[i].second.size();
            if (u(m_rng) < 0.5 && child[i] > 0)
              --child[i];
            else if (child[i] + 1 < n)
              ++child[i];
          }
        }
        children.push_back(std::move(child));
      }
      // A generation is one batch; a child seen before costs nothing and counts as idle.
      std::vector<bool> was_seen;
      for (const auto& c : children) was_seen.push_back(m_ev.seen(c));
      auto costs = m_ev.costs(children);
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (!costs[i]) return;
        idle = was_seen[i] ? idle + 1 : 0;
        next.emplace_back(children[i], *costs[i]);
      }
      pop = std::move(next);
      if (m_ev.seen_count() >= m_space.size()) {
        m_r.stop_reason = "space exhausted";
        return;
      }
    }
    m_r.stop_reason = "converged";
  }

  const SearchSpace& m_space;
  Evaluator& m_ev;
  const SearchOptions& m_o;
  SearchResult& m_r;
  std::mt19937_64 m_rng;
  std::set<PointIndex> m_first;           // start points that go into the first batch
  std::vector<PointIndex> m_first_order;  // the same, in the order given, until taken
};

}  // namespace

std::string_view search_strategy_name(SearchStrategy s) {
  switch (s) {
    case SearchStrategy::exhaustive:
      return "exhaustive";
    case SearchStrategy::random:
      return "random";
    case SearchStrategy::local:
      return "local";
    case SearchStrategy::annealing:
      return "annealing";
    case SearchStrategy::genetic:
      return "genetic";
  }
  return "?";
}

std::optional<SearchStrategy> parse_search_strategy(std::string_view name) {
  for (auto s : {SearchStrategy::exhaustive, SearchStrategy::random, SearchStrategy::local,
                 SearchStrategy::annealing, SearchStrategy::genetic})
    if (search_strategy_name(s) == name) return s;
  return std::nullopt;
}

SearchResult run_search(const SearchSpace& space, const Objective& objective,
                        const SearchOptions& options) {
  BatchObjective each = [&](const std::vector<ParamPoint>& points) {
    std::vector<Evaluation> out;
    for (const auto& p : points) {
      auto t0 = std::chrono::steady_clock::now();
      out.push_back(objective(p));
      out.back().wall_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return out;
  };
  return run_search(space, each, options);
}

SearchResult run_search(const SearchSpace& space, const BatchObjective& objective,
                        const SearchOptions& options) {
  SearchResult r;
  r.strategy = options.strategy;
  Evaluator ev(space, objective, options, r);
  Strategies(space, ev, options, r).run();
  if (r.stop_reason.empty()) ev.stopped();  // names the budget that ended it
  return r;
}

nlohmann::json to_json(const SearchResult& r) {
  auto eval = [](const Evaluation& e) {
    nlohmann::json j{{"point", e.point},
                     {"ok", e.ok},
                     {"cost", e.ok ? nlohmann::json(e.cost) : nlohmann::json(nullptr)},
                     {"failure", e.failure},
                     {"wall_s", e.wall_s},
                     {"build_s", e.build_s}};
    if (e.ok && e.cost_high > 0) j["cost_interval"] = {e.cost_low, e.cost_high};
    if (e.device >= 0) j["gpu"] = e.device;
    return j;
  };
  nlohmann::json history = nlohmann::json::array();
  for (const auto& e : r.history) history.push_back(eval(e));
  nlohmann::json learned = nlohmann::json::array();
  for (const auto& h : r.learned)
    learned.push_back({{"param", h.param},
                       {"value", h.value},
                       {"failures", h.failures},
                       {"example", h.example_failure}});
  return {{"strategy", std::string(search_strategy_name(r.strategy))},
          {"best", r.best ? eval(*r.best) : nlohmann::json(nullptr)},
          {"evaluations", r.history.size()},
          {"skipped_infeasible", r.skipped_infeasible},
          {"skipped_learned", r.skipped_learned},
          {"learned_constraints", learned},
          {"stop_reason", r.stop_reason},
          {"history", history}};
}

}  // namespace kopt::tune
