#include "kopt/analysis/method_selection.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace kopt {
namespace {

const MethodCatalog& catalog() {
  static MethodCatalog c = *builtin_method_catalog();
  return c;
}

// A profile with barrier stalls, uncoalesced stores and a memory-bound kernel well below
// its roof (kopt__memory_roof_pct is what analysis/headroom.hpp derives).
MetricValues profile() {
  return {{"smsp__average_warps_active_per_issue_active.ratio", 10},
          {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 4.5},
          {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 1},
          {"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", 4},
          {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30},
          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20},
          {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 5}};
}

SelectionContext context(int sm = 90) {
  SelectionContext ctx;
  ctx.catalog = &catalog();
  ctx.metrics = trigger_metrics(profile());
  ctx.metrics["kopt__memory_roof_pct"] = 30;
  ctx.budget = allocate_budget(0.0, 0.6, 0.3);  // memory 2, latency 1
  ctx.sm = sm;
  return ctx;
}

std::vector<std::string> ids(const std::vector<MethodCandidate>& c) {
  std::vector<std::string> out;
  for (const auto& x : c) out.push_back(x.method);
  return out;
}

bool has_issue(const std::vector<ValidationIssue>& v, const std::string& rule,
               const std::string& method = "") {
  return std::any_of(v.begin(), v.end(), [&](const ValidationIssue& i) {
    return i.rule == rule && (method.empty() || i.method == method);
  });
}

TEST(TriggerStrength, BetweenGoodAndBadEitherWay) {
  EXPECT_DOUBLE_EQ(trigger_strength({"m", 0.1, 0.4}, 0.25), 0.5);
  EXPECT_DOUBLE_EQ(trigger_strength({"m", 0.1, 0.4}, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(trigger_strength({"m", 0.1, 0.4}, 0.9), 1.0);
  EXPECT_DOUBLE_EQ(trigger_strength({"m", 85, 40}, 62.5), 0.5);  // lower is worse
  auto d = trigger_metrics(profile());
  EXPECT_DOUBLE_EQ(d.at("kopt__stall_share_barrier"), 0.45);
  EXPECT_DOUBLE_EQ(*method_strength(*catalog().find("warp_shuffle_reduction"), d), 1.0);
  EXPECT_FALSE(method_strength(*catalog().find("remove_spills"), d));  // no local-memory metrics
}

TEST(SuggestMethods, TriggeredByPriorityWithinTheBudget) {
  EXPECT_EQ(ids(suggest_methods(context())),
            (std::vector<std::string>{"shared_memory_staging", "vectorized_global_loads",
                                      "warp_shuffle_reduction"}));
}

TEST(SuggestMethods, LeavesOutDiscreditedAndInapplicableMethods) {
  SelectionContext ctx = context(80);
  ctx.history["shared_memory_staging"] = MethodOutcome::implementation_failed;
  auto s = ids(suggest_methods(ctx));
  EXPECT_EQ(s, (std::vector<std::string>{"vectorized_global_loads", "vectorized_global_stores",
                                         "warp_shuffle_reduction"}));
  ctx.available = std::set<std::string>{"vectorized_global_loads"};  // all the problem can switch
  EXPECT_EQ(ids(suggest_methods(ctx)), std::vector<std::string>{"vectorized_global_loads"});
}

TEST(ValidateMethods, AcceptsTheSuggestion) {
  SelectionContext ctx = context();
  MethodSet set;
  set.methods = ids(suggest_methods(ctx));
  EXPECT_TRUE(validate_methods(ctx, set).empty());
}

TEST(ValidateMethods, SkippingAHigherPriorityTriggeredMethodNeedsAReason) {
  SelectionContext ctx = context();
  MethodSet set{{"vectorized_global_stores"}, {}, {}};
  auto issues = validate_methods(ctx, set);
  EXPECT_TRUE(has_issue(issues, "skipped_without_reason", "shared_memory_staging"));
  EXPECT_TRUE(has_issue(issues, "skipped_without_reason", "vectorized_global_loads"));
  set.skip_reasons = {{"shared_memory_staging", "the kernel already stages through shared memory"},
                      {"vectorized_global_loads", "rows are not a multiple of 4"}};
  EXPECT_TRUE(validate_methods(ctx, set).empty());
}

TEST(ValidateMethods, BudgetUnknownIdsArchitectureAndReuse) {
  SelectionContext ctx = context(80);
  MethodSet over{
      {"shared_memory_staging", "vectorized_global_loads", "vectorized_global_stores"}, {}, {}};
  EXPECT_TRUE(has_issue(validate_methods(ctx, over), "over_budget"));
  MethodSet latency_on_compute{{"tensor_cores"}, {}, {}};  // compute has no slot
  EXPECT_TRUE(has_issue(validate_methods(ctx, latency_on_compute), "over_budget"));
  MethodSet unknown{{"magic"}, {}, {}};
  EXPECT_TRUE(has_issue(validate_methods(ctx, unknown), "unknown_method", "magic"));
  MethodSet tma{{"tma"},
                {{"shared_memory_staging", "x"},
                 {"vectorized_global_loads", "x"},
                 {"vectorized_global_stores", "x"}},
                {}};
  EXPECT_TRUE(has_issue(validate_methods(ctx, tma), "not_applicable", "tma"));
  ctx.history["warp_shuffle_reduction"] = MethodOutcome::ineffective;
  MethodSet reuse{{"warp_shuffle_reduction"}, {}, {}};
  EXPECT_TRUE(
      has_issue(validate_methods(ctx, reuse), "reuse_without_override", "warp_shuffle_reduction"));
  reuse.overrides = {"warp_shuffle_reduction"};
  EXPECT_FALSE(has_issue(validate_methods(ctx, reuse), "reuse_without_override"));
}

TEST(MethodOutcomeNames, RoundTrip) {
  for (auto o :
       {MethodOutcome::effective, MethodOutcome::ineffective, MethodOutcome::implementation_failed})
    EXPECT_EQ(parse_enum<MethodOutcome>(name_of(o)), o);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(UntriggeredCandidates, UntriedSwitchableMethodsByPriorityWithABudgetSlot) {
  SelectionContext ctx;
  ctx.catalog = &catalog();
  ctx.available =
      std::set<std::string>{"warp_shuffle_reduction", "vectorized_global_loads", "not_in_catalog"};
  ctx.history["vectorized_global_loads"] = MethodOutcome::ineffective;
  auto chosen = untriggered_candidates(ctx, 2);
  ASSERT_EQ(chosen.size(), 1u);  // the classified one and the unknown id are left out
  EXPECT_EQ(chosen[0].method, "warp_shuffle_reduction");
  EXPECT_NE(chosen[0].why.find("untriggered"), std::string::npos);
  EXPECT_EQ(ctx.budget.of(chosen[0].axis), 1);
  MethodSet set{{"warp_shuffle_reduction"}, {}, {}};
  EXPECT_TRUE(validate_methods(ctx, set).empty());
  ctx.available.reset();
  EXPECT_TRUE(untriggered_candidates(ctx, 2).empty());
}

}  // namespace
}  // namespace kopt
