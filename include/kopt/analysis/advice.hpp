#pragma once
// "What next?": the ranked answer of an iteration's open. Triggered methods first (the
// catalog's triggers on the profile), then, while headroom remains, the untried methods of
// the axes the budget funds, bounding axis first; or a reasoned stop. Never an empty answer
// without a reason:
//   - at or past 90 % of the bounding roof: stop (the headroom says how little is left);
//   - a method already in the champion's machine code, or whose trigger metric already sits
//     at its good end (strength 0), is not suggested (and the notes say so);
//   - nothing left to suggest: stop, "tuning only", with the headroom that remains.
// Ranking: funded axes first, the axis the bottleneck class names (memory-bound: memory,
// compute-bound: compute, the others: latency) before the rest, the axis's budget (larger
// first), then triggered methods — those whose trigger is a metric the bottleneck rule cites
// first — by the catalog's priority (the validator's order), the experience DB's success rate
// and the trigger's strength; then untriggered ones — those whose trigger metric was measured
// before those without — by the experience DB's success rate, the catalog's priority and the
// trigger's strength. A roofline trigger
// (kopt__memory_roof_pct, kopt__compute_roof_pct) that does not apply leaves the method out.
#include <set>
#include <string>
#include <vector>

#include "kopt/analysis/headroom.hpp"
#include "kopt/analysis/method_selection.hpp"

namespace kopt {

struct Suggestion {
  std::string method;
  Axis axis = Axis::latency;
  int rank = 0;  // 1 first
  bool triggered = false;
  bool within_budget = false;      // the loop would try it this iteration
  std::optional<double> strength;  // the trigger's strength; nullopt: its metric was not profiled
  std::string why;
  // The metric it should move, where it is and where the method should take it.
  std::string metric;
  std::optional<double> now;
  double toward = 0;
  double gain_s = 0;  // at most this much time to gain on its axis
  std::string playbook;
  std::string expect() const;  // "`dram__...` 84 -> 85; at most 30 us"
};

struct AdviceInputs {
  SelectionContext
      ctx;  // catalog, sm, history, available, preference (metrics: advice_metrics, here)
  const Explanation* explanation = nullptr;
  double time_s = 0;              // the champion's median
  std::set<std::string> in_sass;  // methods verified in the champion's machine code
  BudgetFormula formula = BudgetFormula::headroom;
  std::size_t list = 5;  // how many suggestions to list at most
};

struct Advice {
  BudgetFormula formula = BudgetFormula::headroom;
  Headroom headroom;
  AxisBudget budget;       // the formula's
  AxisBudget kernelflow;   // KernelFlow's, for comparison
  AxisBudget by_headroom;  // the headroom formula's
  std::vector<Suggestion> suggestions;
  bool stop = false;
  std::string stop_reason;
  std::vector<std::string> notes;
  MetricValues metrics;  // what the triggers were read from: advice_metrics (headroom.hpp)
};

Advice advise(const AdviceInputs& in);

nlohmann::json to_json(const Advice& a);

}  // namespace kopt
