#pragma once
// Search strategies over a parameter space: exhaustive, random, multi-start local search,
// simulated annealing and a genetic algorithm. All share one evaluator, which never
// evaluates a point twice, stops at the budget (evaluations and wall time), and learns
// hidden constraints: a param value whose every evaluated point failed (to compile, to
// launch, to be correct), at least twice, is not tried again.
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/tune/search_space.hpp"

namespace kopt::tune {

enum class SearchStrategy { exhaustive, random, local, annealing, genetic };
std::string_view search_strategy_name(SearchStrategy s);
std::optional<SearchStrategy> parse_search_strategy(std::string_view name);

// What evaluating a point gave: a cost to minimise (seconds), or a failure with its reason.
struct Evaluation {
  ParamPoint point;
  bool ok = false;
  double cost = 0;
  std::string failure;  // "compile_failed: ...", "wrong", ...
  double wall_s = 0;    // how long the evaluation took (its share of its batch's)
  double cost_low = 0,
         cost_high = 0;  // an interval around cost where the objective knows one (0: none)
  double build_s =
      0;  // its compile's time, on one of the pool's threads (in an earlier run when cached)
  int device = -1;  // which of the run's devices measured it (tune --gpus); -1: not said
};
using Objective = std::function<Evaluation(const ParamPoint&)>;
// Several points at once (built in parallel, checked and timed side by side): one Evaluation
// per point, in order.
using BatchObjective = std::function<std::vector<Evaluation>(const std::vector<ParamPoint>&)>;

struct SearchBudget {
  std::size_t max_evaluations = 100;
  double max_wall_s = 0;  // 0: no limit
};

struct HiddenConstraint {
  std::string param;
  std::int64_t value = 0;
  std::size_t failures = 0;
  std::string example_failure;
};

struct SearchProgress {
  std::size_t evaluations = 0;
  std::size_t budget = 0;
  std::optional<Evaluation> best;
  double elapsed_s = 0, time_left_s = 0;  // time_left_s: 0 when there is no time budget
};

struct SearchResult {
  SearchStrategy strategy = SearchStrategy::exhaustive;
  std::optional<Evaluation> best;
  std::vector<Evaluation> history;     // in evaluation order
  std::size_t skipped_infeasible = 0;  // declared constraints
  std::size_t skipped_learned = 0;     // hidden constraints
  std::vector<HiddenConstraint> learned;
  std::string stop_reason;  // "space exhausted", "evaluation budget", "time budget", "converged"
};

struct SearchOptions {
  SearchStrategy strategy = SearchStrategy::random;
  SearchBudget budget;
  std::uint64_t seed = 1;
  std::vector<ParamPoint> start;  // evaluated first (e.g. the default point)
  // local: hill climbs from the best this many start points, then stop ("converged"), instead of
  // restarting at random points until the budget ends (tune --axis: a shape's search from its
  // neighbours' champions). 0: random restarts.
  std::size_t climbs_from_start = 0;
  // Points handed to the objective together, where the strategy has that many to evaluate:
  // exhaustive and random draw this many, local search a point's neighbours, the genetic
  // algorithm a generation; annealing goes one point at a time. The budgets are checked
  // between batches (a batch never goes past the evaluation budget).
  std::size_t batch = 1;
  // Told the batch that comes after the one being evaluated, where the strategy knows it
  // (exhaustive, random), so that it can be built while this one runs on the device.
  std::function<void(const std::vector<ParamPoint>&)> prefetch;
  std::function<void(const SearchProgress&)> progress = [](const SearchProgress&) {};
};

SearchResult run_search(const SearchSpace& space, const BatchObjective& objective,
                        const SearchOptions& options);
SearchResult run_search(const SearchSpace& space, const Objective& objective,
                        const SearchOptions& options);

nlohmann::json to_json(const SearchResult& r);

}  // namespace kopt::tune
