// Strategies on synthetic cost surfaces with a known optimum; each must find it within
// the budget stated in the test.
#include "kopt/tune/search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace kopt::tune {
namespace {

// n params with values 0..k-1.
SearchSpace grid(std::size_t n, std::int64_t k) {
  SearchSpace s;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> values;
    for (std::int64_t v = 0; v < k; ++v) values.push_back(v);
    s.params.emplace_back("P" + std::to_string(i), values);
  }
  return s;
}

// A bowl with its minimum at `opt` (cost 1 there).
Objective bowl(std::vector<std::int64_t> opt) {
  return [opt](const ParamPoint& p) {
    double c = 1;
    std::size_t i = 0;
    for (const auto& [name, v] : p) c += 0.05 * double((v - opt[i]) * (v - opt[i])), ++i;
    return Evaluation{p, true, c, "", 0};
  };
}

// Many local minima (a Rastrigin-like surface) with the global one at `opt`.
Objective rugged(std::vector<std::int64_t> opt) {
  return [opt](const ParamPoint& p) {
    double c = 1;
    std::size_t i = 0;
    for (const auto& [name, v] : p) {
      double d = double(v - opt[i++]);
      c += 0.02 * d * d + 0.3 * (1 - std::cos(2.0 * M_PI * d / 3.0));
    }
    return Evaluation{p, true, c, "", 0};
  };
}

ParamPoint point(std::vector<std::int64_t> v) {
  ParamPoint p;
  for (std::size_t i = 0; i < v.size(); ++i) p["P" + std::to_string(i)] = v[i];
  return p;
}

SearchResult search(const SearchSpace& s, const Objective& f, SearchStrategy st, std::size_t budget,
                    std::uint64_t seed = 7) {
  SearchOptions o;
  o.strategy = st;
  o.budget.max_evaluations = budget;
  o.seed = seed;
  return run_search(s, f, o);
}

TEST(Search, ExhaustiveVisitsEveryFeasiblePointOnce) {
  SearchSpace s = grid(2, 6);
  s.feasible = [](const ParamPoint& p) { return p.at("P0") + p.at("P1") <= 8; };
  SearchResult r = search(s, bowl({4, 3}), SearchStrategy::exhaustive, 1000);
  EXPECT_EQ(r.history.size(), 33u);  // 36 points, 3 with P0 + P1 > 8
  EXPECT_EQ(r.skipped_infeasible, 3u);
  EXPECT_EQ(r.stop_reason, "space exhausted");
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->point, point({4, 3}));
}

TEST(Search, RandomFindsTheOptimumOfASmallSpaceWithinItsSize) {
  SearchSpace s = grid(2, 8);  // 64 points, budget 64: sampling without replacement covers it
  SearchResult r = search(s, rugged({5, 2}), SearchStrategy::random, 64);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->point, point({5, 2}));
  std::set<ParamPoint> distinct;
  for (const auto& e : r.history) distinct.insert(e.point);
  EXPECT_EQ(distinct.size(), r.history.size());  // nothing measured twice
}

TEST(Search, LocalAnnealingAndGeneticFindTheBowlsMinimumWithinAFifthOfTheSpace) {
  SearchSpace s = grid(4, 8);  // 4096 points; budget 800
  for (auto st : {SearchStrategy::local, SearchStrategy::annealing, SearchStrategy::genetic})
    for (std::uint64_t seed : {1, 2, 3}) {
      SearchResult r = search(s, bowl({6, 1, 3, 7}), st, 800, seed);
      ASSERT_TRUE(r.best) << search_strategy_name(st);
      EXPECT_EQ(r.best->point, point({6, 1, 3, 7})) << search_strategy_name(st) << " seed " << seed;
    }
}

TEST(Search, LocalAnnealingAndGeneticEscapeLocalMinima) {
  SearchSpace s = grid(3, 12);  // 1728 points; budget 600
  for (auto st : {SearchStrategy::local, SearchStrategy::annealing, SearchStrategy::genetic})
    for (std::uint64_t seed : {1, 2, 3}) {
      SearchResult r = search(s, rugged({9, 2, 5}), st, 600, seed);
      ASSERT_TRUE(r.best);
      EXPECT_EQ(r.best->point, point({9, 2, 5})) << search_strategy_name(st) << " seed " << seed;
    }
}

TEST(Search, StartPointsComeFirst) {
  SearchOptions o;
  o.strategy = SearchStrategy::genetic;
  o.budget.max_evaluations = 5;
  o.start = {point({3, 3})};
  SearchResult r = run_search(grid(2, 8), bowl({0, 0}), o);
  ASSERT_FALSE(r.history.empty());
  EXPECT_EQ(r.history[0].point, point({3, 3}));
  EXPECT_EQ(r.history.size(), 5u);
  EXPECT_EQ(r.stop_reason, "evaluation budget");
}

TEST(Search, ClimbsFromTheBestStartPointsThenStop) {
  // A neighbour shape's champion near the optimum: the climb from it reaches the optimum in a
  // few dozen evaluations of a 4096-point space, and the search ends there (no random restarts).
  SearchOptions o;
  o.strategy = SearchStrategy::local;
  o.budget.max_evaluations = 800;
  o.start = {point({0, 0, 0, 0}), point({5, 2, 3, 6})};
  o.climbs_from_start = 1;
  SearchResult r = run_search(grid(4, 8), bowl({6, 1, 3, 7}), o);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->point, point({6, 1, 3, 7}));
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_LT(r.history.size(), 50u) << "one climb from the better start, not from both";
  EXPECT_EQ(r.history[0].point, point({0, 0, 0, 0}));
  EXPECT_EQ(r.history[1].point, point({5, 2, 3, 6}));
}

TEST(Search, FailuresBecomeHiddenConstraints) {
  // Every point with P1 = 7 fails to compile; the rest is a bowl.
  SearchSpace s = grid(2, 8);
  Objective f = [](const ParamPoint& p) {
    if (p.at("P1") == 7)
      return Evaluation{p, false, 0, "compile_failed: too much shared memory", 0};
    return bowl({2, 6})(p);
  };
  SearchResult r = search(s, f, SearchStrategy::exhaustive, 1000);
  ASSERT_EQ(r.learned.size(), 1u);
  EXPECT_EQ(r.learned[0].param, "P1");
  EXPECT_EQ(r.learned[0].value, 7);
  EXPECT_EQ(r.learned[0].example_failure, "compile_failed: too much shared memory");
  EXPECT_EQ(r.skipped_learned, 6u);  // learned after (0,7) and (1,7): 6 more are never tried
  EXPECT_EQ(r.best->point, point({2, 6}));
}

TEST(Search, AValueIsNotBlamedForAnotherValuesFailures) {
  // Only (P0 = 3, P1 = 5) fails; P0 = 3 must not become a constraint.
  SearchSpace s = grid(2, 6);
  Objective f = [](const ParamPoint& p) {
    if (p.at("P0") == 3 && p.at("P1") == 5) return Evaluation{p, false, 0, "wrong", 0};
    return bowl({3, 5})(p);
  };
  SearchResult r = search(s, f, SearchStrategy::exhaustive, 1000);
  EXPECT_TRUE(r.learned.empty());
  EXPECT_EQ(r.skipped_learned, 0u);
  EXPECT_NEAR(r.best->cost, 1.05, 1e-12);  // a neighbour of the failing optimum
}

TEST(Search, TimeBudgetStopsTheSearch) {
  SearchOptions o;
  o.strategy = SearchStrategy::random;
  o.budget.max_evaluations = 1000000;
  o.budget.max_wall_s = 0.05;
  std::size_t progress_calls = 0;
  o.progress = [&](const SearchProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.time_left_s, 0.05);
  };
  SearchResult r = run_search(grid(6, 10), bowl({1, 2, 3, 4, 5, 6}), o);
  EXPECT_EQ(r.stop_reason, "time budget");
  EXPECT_EQ(progress_calls, r.history.size());
}

TEST(Search, StrategyNames) {
  for (auto st : {SearchStrategy::exhaustive, SearchStrategy::random, SearchStrategy::local,
                  SearchStrategy::annealing, SearchStrategy::genetic})
    EXPECT_EQ(parse_search_strategy(search_strategy_name(st)), st);
  EXPECT_FALSE(parse_search_strategy("bayesian"));
}

// Batches: strategies hand the objective several points at once; the same searches, fewer calls.

// A bowl with its minimum at `opt`, recording the size of every batch it is handed.
struct BatchBowl {
  std::vector<std::int64_t> opt;
  std::vector<std::size_t> batches;
  BatchObjective objective() {
    return [this](const std::vector<ParamPoint>& points) {
      batches.push_back(points.size());
      std::vector<Evaluation> out;
      for (const auto& p : points) {
        double c = 1;
        std::size_t i = 0;
        for (const auto& [name, v] : p) c += 0.05 * double((v - opt[i]) * (v - opt[i])), ++i;
        out.push_back(Evaluation{p, true, c, "", 0});
      }
      return out;
    };
  }
};

SearchOptions options(SearchStrategy st, std::size_t budget, std::size_t batch,
                      std::uint64_t seed = 3) {
  SearchOptions o;
  o.strategy = st;
  o.budget.max_evaluations = budget;
  o.batch = batch;
  o.seed = seed;
  return o;
}

TEST(SearchBatches, ExhaustiveHandsOverFullBatchesOfFeasiblePointsOnly) {
  SearchSpace s = grid(2, 6);
  s.feasible = [](const ParamPoint& p) { return p.at("P0") + p.at("P1") <= 8; };  // 33 of 36
  BatchBowl f{{4, 3}};
  SearchResult r = run_search(s, f.objective(), options(SearchStrategy::exhaustive, 1000, 10));
  EXPECT_EQ(r.history.size(), 33u);
  EXPECT_EQ(r.skipped_infeasible, 3u);
  EXPECT_EQ(r.stop_reason, "space exhausted");
  EXPECT_EQ(f.batches, (std::vector<std::size_t>{10, 10, 10, 3}));
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->point, point({4, 3}));
}

TEST(SearchBatches, ABatchNeverGoesPastTheEvaluationBudget) {
  BatchBowl f{{1, 1}};
  SearchOptions o = options(SearchStrategy::exhaustive, 25, 10);
  o.start = {point({5, 5})};
  SearchResult r = run_search(grid(2, 8), f.objective(), o);
  EXPECT_EQ(r.history.size(), 25u);
  EXPECT_EQ(r.history[0].point,
            point({5, 5}));  // the start point first, at the head of the first batch
  EXPECT_EQ(f.batches, (std::vector<std::size_t>{10, 10, 5}));
  EXPECT_EQ(r.stop_reason, "evaluation budget");
  std::set<ParamPoint> distinct;
  for (const auto& e : r.history) distinct.insert(e.point);
  EXPECT_EQ(distinct.size(), r.history.size());  // the start point is not evaluated again
}

TEST(SearchBatches, RandomDrawsDistinctPointsInBatches) {
  BatchBowl f{{5, 2}};
  SearchResult r = run_search(grid(2, 8), f.objective(), options(SearchStrategy::random, 64, 16));
  EXPECT_EQ(r.history.size(), 64u);
  std::set<ParamPoint> distinct;
  for (const auto& e : r.history) distinct.insert(e.point);
  EXPECT_EQ(distinct.size(), 64u);
  EXPECT_EQ(f.batches, (std::vector<std::size_t>{16, 16, 16, 16}));
  EXPECT_EQ(r.best->point, point({5, 2}));
}

TEST(SearchBatches, LocalAndGeneticFindTheOptimumWithBatches) {
  for (auto st : {SearchStrategy::local, SearchStrategy::genetic, SearchStrategy::annealing}) {
    BatchBowl f{{6, 1, 3, 7}};
    SearchResult r = run_search(grid(4, 8), f.objective(), options(st, 800, 16, 2));
    ASSERT_TRUE(r.best) << search_strategy_name(st);
    EXPECT_EQ(r.best->point, point({6, 1, 3, 7})) << search_strategy_name(st);
    std::size_t largest = 0;
    for (auto b : f.batches) largest = std::max(largest, b);
    if (st == SearchStrategy::annealing)
      EXPECT_EQ(largest, 1u);  // one point at a time
    else
      EXPECT_GT(largest, 1u) << search_strategy_name(st);  // neighbours, generations
  }
}

TEST(SearchBatches, FailuresInABatchStillTeachHiddenConstraints) {
  BatchObjective f = [](const std::vector<ParamPoint>& points) {
    std::vector<Evaluation> out;
    for (const auto& p : points)
      out.push_back(p.at("P1") == 7
                        ? Evaluation{p, false, 0, "compile_failed: too much shared memory", 0}
                        : Evaluation{p, true, 1.0 + double(p.at("P0")), "", 0});
    return out;
  };
  SearchResult r = run_search(grid(2, 8), f, options(SearchStrategy::exhaustive, 1000, 8));
  ASSERT_EQ(r.learned.size(), 1u);
  EXPECT_EQ(r.learned[0].param, "P1");
  EXPECT_GT(r.skipped_learned, 0u);  // learned after a batch: later batches skip P1 = 7
  EXPECT_EQ(r.best->point.at("P0"), 0);
}

}  // namespace
}  // namespace kopt::tune

namespace kopt::tune {
namespace {

// A point that breaks a constraint is repaired by the first one-param change that fits, in
// declared order; a feasible point stays; a point no one-param change can fix has none.
TEST(SearchSpaceRepair, NearestFeasibleChangesOneParamInDeclaredOrder) {
  SearchSpace s;
  s.params = {{"STAGES", {3, 2, 4}}, {"ASYNC", {1, 0}}, {"BM", {128, 64}}};
  s.feasible = [](const ParamPoint& p) {
    return (p.at("ASYNC") == 1 || p.at("STAGES") == 2) && p.at("BM") != 256;
  };
  ParamPoint off{{"STAGES", 3}, {"ASYNC", 0}, {"BM", 128}};
  EXPECT_EQ(s.nearest_feasible(off), (ParamPoint{{"STAGES", 2}, {"ASYNC", 0}, {"BM", 128}}));
  ParamPoint on{{"STAGES", 3}, {"ASYNC", 1}, {"BM", 128}};
  EXPECT_EQ(s.nearest_feasible(on), on);
  ParamPoint twice{{"STAGES", 3}, {"ASYNC", 0}, {"BM", 256}};
  EXPECT_FALSE(s.nearest_feasible(twice));
}

}  // namespace
}  // namespace kopt::tune

namespace kopt::tune {
namespace {

// A move that breaks a constraint is repaired by one more change, never by undoing the move.
TEST(SearchSpaceRepairs, AWiderTileGetsAShallowerPipelineNotItsOldWidth) {
  SearchSpace s;
  s.params = {{"BN", {128, 256}}, {"STAGES", {2, 3, 4, 5}}};
  s.feasible = [](const ParamPoint& q) { return q.at("STAGES") * (128 + q.at("BN")) <= 1600; };
  ParamPoint moved{{"BN", 256}, {"STAGES", 5}};
  auto r = s.repairs(moved, "BN");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (ParamPoint{{"BN", 256}, {"STAGES", 2}}));
  EXPECT_EQ(r[2], (ParamPoint{{"BN", 256}, {"STAGES", 4}}));
  EXPECT_EQ(s.nearest_feasible(moved, "BN"), (ParamPoint{{"BN", 256}, {"STAGES", 2}}));
  EXPECT_EQ(s.nearest_feasible(moved), (ParamPoint{{"BN", 128}, {"STAGES", 5}}));
  EXPECT_EQ(s.repairs(ParamPoint{{"BN", 128}, {"STAGES", 2}}, "BN").size(),
            1u);  // feasible: itself
}

}  // namespace
}  // namespace kopt::tune
