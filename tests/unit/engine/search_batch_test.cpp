// Strategies handing the objective batches of points: the same searches, fewer calls.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "kopt/engine/search/search.hpp"

namespace kopt {
namespace {

SearchSpace grid(std::size_t n, std::int64_t k) {
  SearchSpace s;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> values;
    for (std::int64_t v = 0; v < k; ++v) values.push_back(v);
    s.params.emplace_back("P" + std::to_string(i), values);
  }
  return s;
}

ParamPoint point(std::vector<std::int64_t> v) {
  ParamPoint p;
  for (std::size_t i = 0; i < v.size(); ++i) p["P" + std::to_string(i)] = v[i];
  return p;
}

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

SearchOptions options(SearchStrategy st, std::size_t budget, std::size_t batch, std::uint64_t seed = 3) {
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
  EXPECT_EQ(r.history[0].point, point({5, 5}));  // the start point first, at the head of the first batch
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
    if (st == SearchStrategy::annealing) EXPECT_EQ(largest, 1u);  // one point at a time
    else EXPECT_GT(largest, 1u) << search_strategy_name(st);     // neighbours, generations
  }
}

TEST(SearchBatches, FailuresInABatchStillTeachHiddenConstraints) {
  BatchObjective f = [](const std::vector<ParamPoint>& points) {
    std::vector<Evaluation> out;
    for (const auto& p : points)
      out.push_back(p.at("P1") == 7 ? Evaluation{p, false, 0, "compile_failed: too much shared memory", 0}
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
}  // namespace kopt
