#pragma once
// Which methods an iteration tries: each method's trigger strength from the profile, the
// catalog's suggestion within the axis budget, and the validator that rejects a method set
// breaking the rules (over budget, a triggered higher-priority method skipped without a
// stated reason, a method already classified ineffective or implementation-failed reused
// without an override, an unknown id, a method the architecture lacks).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kopt/analysis/axis_budget.hpp"
#include "kopt/core/enum_names.hpp"

namespace kopt {

// The profile's metrics plus those kopt derives for triggers: kopt__stall_share_<reason>,
// kopt__gap_compute|memory|latency, kopt__local_sectors.
MetricValues trigger_metrics(const MetricValues& m);

// Where `value` sits between the trigger's good (0) and bad (1) thresholds, clamped.
double trigger_strength(const Trigger& t, double value);
// The method's strength on these metrics, its strongest trigger's; nullopt without a trigger
// or its metric.
std::optional<double> method_strength(const Method& m, const MetricValues& derived);
// The trigger behind method_strength (the first one when no metric is there); null without one.
const Trigger* strongest_trigger(const Method& m, const MetricValues& derived);
inline constexpr double k_triggered = 0.5;  // a method is "triggered" from this strength on

// What a method did in a version (the loop's attribution).
enum class MethodOutcome { effective, ineffective, implementation_failed };

}  // namespace kopt

template <>
struct kopt::EnumNames<kopt::MethodOutcome> {
  static constexpr std::array<std::pair<MethodOutcome, std::string_view>, 3> table{{
      {MethodOutcome::effective, "effective"},
      {MethodOutcome::ineffective, "ineffective"},
      {MethodOutcome::implementation_failed, "implementation_failed"},  // not in the SASS
  }};
};

namespace kopt {

struct MethodCandidate {
  std::string method;
  Axis axis = Axis::latency;
  int priority = 0;
  double strength = 0;
  std::string why;  // "kopt__stall_share_barrier = 0.42 (good 0.1, bad 0.4)"
};

struct SelectionContext {
  const MethodCatalog* catalog = nullptr;
  AxisBudget budget;
  MetricValues metrics;  // from trigger_metrics()
  int sm =
      0;  // the target architecture (0: not a CUDA target, e.g. OpenCL: no method that needs an sm)
  std::map<std::string, MethodOutcome> history;  // earlier classifications (unmasked)
  std::optional<std::set<std::string>>
      available;  // methods the problem can switch on (nullopt: any)
  std::map<std::string, double>
      preference;  // past success rate (experience): breaks ties of priority and strength
};

// The architecture has what the method needs, and the problem can switch it (when that is asked).
bool applicable(const Method& m, const SelectionContext& ctx);
// Classified ineffective or implementation-failed before.
bool discredited(const SelectionContext& ctx, const std::string& id);

// Triggered methods, per axis by priority then strength, within the budget; methods
// classified ineffective or implementation-failed before are left out.
std::vector<MethodCandidate> suggest_methods(const SelectionContext& ctx);

// Without counters (a backend with no counter profiler) no trigger can fire. Then the
// methods the problem can switch that carry no classification yet are tried blind, by
// catalog priority, at most `limit` of them; each gets a budget slot on its axis, and its
// `why` says it was not triggered.
std::vector<MethodCandidate> untriggered_candidates(SelectionContext& ctx, std::size_t limit);

struct MethodSet {
  std::vector<std::string> methods;
  std::map<std::string, std::string> skip_reasons;  // method -> why it was not chosen
  std::set<std::string> overrides;                  // reuse allowed despite the history
};

struct ValidationIssue {
  std::string rule;  // unknown_method, over_budget, not_applicable, skipped_without_reason,
                     // reuse_without_override
  std::string method;
  std::string message;
};

std::vector<ValidationIssue> validate_methods(const SelectionContext& ctx, const MethodSet& set);

}  // namespace kopt
