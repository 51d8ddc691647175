#include "kopt/analysis/advice.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kopt/core/units.hpp"

namespace kopt {
namespace {

std::string number(double v) {
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::string Suggestion::expect() const {
  std::string time =
      fmt::format("at most {} to gain on the {} axis", human_time(gain_s), axis_name(axis));
  if (metric.empty()) return time;
  return fmt::format("`{}` {} -> {}; {}", metric, now ? number(*now) : "(not profiled)",
                     number(toward), time);
}

Advice advise(const AdviceInputs& in) {
  Advice a;
  a.formula = in.formula;
  const Explanation& e = *in.explanation;
  a.headroom = compute_headroom(e, in.time_s);
  a.metrics = advice_metrics(e, a.headroom);
  a.kernelflow = allocate_budget(e.gaps);
  a.by_headroom = allocate_budget(a.headroom.gaps());
  a.budget = in.formula == BudgetFormula::headroom ? a.by_headroom : a.kernelflow;
  if (a.headroom.at_roof) {
    a.stop = true;
    a.stop_reason =
        a.headroom.summary + ": stop; what is left is within what timing noise and tuning can move";
    return a;
  }
  SelectionContext ctx = in.ctx;
  ctx.metrics = a.metrics;
  auto pref = [&](const std::string& m) {
    auto it = ctx.preference.find(m);
    return it == ctx.preference.end() ? 0.5 : it->second;
  };
  for (const auto& m : ctx.catalog->methods) {
    int axis = static_cast<int>(m.axis);
    if (in.in_sass.contains(m.id)) {
      a.notes.push_back(m.id + ": already in the champion's machine code");
      continue;
    }
    if (!applicable(m, ctx) || discredited(ctx, m.id)) continue;
    auto strength = method_strength(m, ctx.metrics);
    const Trigger* t = strongest_trigger(m, ctx.metrics);  // the one behind `strength`
    // A trigger on the roofline's position that is absent: the method is for the other bound.
    if (!strength && m.trigger && m.trigger->metric.starts_with("kopt__") &&
        m.trigger->metric.ends_with("_roof_pct")) {
      a.notes.push_back(fmt::format(
          "{}: for {}-bound kernels", m.id,
          m.trigger->metric.find("memory") != std::string::npos ? "memory" : "compute"));
      continue;
    }
    bool triggered = strength && *strength >= k_triggered;
    if (!triggered && a.budget.slots[axis] == 0) continue;
    if (strength && *strength <= 0) {
      a.notes.push_back(
          fmt::format("{}: its trigger `{}` is already where the method would take it ({})", m.id,
                      t->metric, number(*metric(ctx.metrics, t->metric))));
      continue;
    }
    Suggestion s;
    s.method = m.id;
    s.axis = m.axis;
    s.triggered = triggered;
    s.strength = strength;
    s.playbook = m.playbook;
    s.gain_s = a.headroom.of(m.axis).gain_s;
    if (t) {
      s.metric = t->metric;
      s.now = metric(ctx.metrics, t->metric);
      s.toward = t->good;
    }
    if (triggered)
      s.why = fmt::format("triggered: {} = {} (good {:g}, bad {:g})", t->metric, number(*s.now),
                          t->good, t->bad);
    else
      s.why = fmt::format(
          "untried on the {} axis ({}){}", axis_name(m.axis), a.headroom.of(m.axis).text,
          !strength ? (m.trigger ? "; its trigger metric does not apply or was not profiled" : "")
                    : fmt::format("; its trigger is at strength {:.2f}", *strength));
    a.suggestions.push_back(std::move(s));
  }
  // The axis the bottleneck class names goes first: a grid that cannot fill the GPU is fixed
  // before anything else is worth measuring.
  std::optional<Axis> first;
  switch (e.bottleneck.cls) {
    case BottleneckClass::memory_bound:
      first = Axis::memory;
      break;
    case BottleneckClass::compute_bound:
      first = Axis::compute;
      break;
    case BottleneckClass::unknown:
      break;
    default:
      first = Axis::latency;
  }
  // A method whose trigger is a metric the bottleneck's rule cites acts on what bounds the
  // kernel (a small grid: the waves); so does one whose metric a finding cites (tensor cores
  // starved by their loads: the LSU pipe).
  auto cites = [&](const std::vector<Evidence>& evidence, const std::string& name) {
    return std::any_of(evidence.begin(), evidence.end(),
                       [&](const Evidence& x) { return x.metric == name; });
  };
  auto cited = [&](const std::string& name) {
    if (cites(e.bottleneck.evidence, name)) return true;
    return std::any_of(e.bottleneck.secondary.begin(), e.bottleneck.secondary.end(),
                       [&](const Finding& f) { return cites(f.evidence, name); });
  };
  auto key = [&](const Suggestion& s) {
    const Method* m = ctx.catalog->find(s.method);
    double strength = s.strength.value_or(-1);
    int funded = a.budget.of(s.axis) == 0, other = first && s.axis != *first,
        aside = !cited(s.metric);
    if (s.triggered)
      return std::tuple{funded, other,       -a.budget.of(s.axis), 0,        aside, 0,
                        0.0,    m->priority, -pref(s.method),      -strength};
    int unknown =
        !s.strength;  // no evidence either way: after the methods whose metric leans toward them
    return std::tuple{funded,  other,           -a.budget.of(s.axis), 1,   aside,
                      unknown, -pref(s.method), m->priority,          0.0, -strength};
  };
  std::stable_sort(a.suggestions.begin(), a.suggestions.end(),
                   [&](const Suggestion& x, const Suggestion& y) { return key(x) < key(y); });
  if (a.suggestions.size() > in.list) a.suggestions.resize(in.list);
  std::array<int, 3> used{0, 0, 0};
  for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
    auto& s = a.suggestions[i];
    s.rank = static_cast<int>(i) + 1;
    int axis = static_cast<int>(s.axis);
    if (used[axis] < a.budget.slots[axis]) {
      ++used[axis];
      s.within_budget = true;
    }
  }
  if (a.suggestions.empty()) {
    a.stop = true;
    a.stop_reason =
        a.headroom.summary +
        ", and no untried method of the catalog addresses it here: tuning only, or stop";
  }
  return a;
}

nlohmann::json to_json(const Advice& a) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : a.suggestions)
    list.push_back({{"rank", s.rank},
                    {"method", s.method},
                    {"axis", std::string(axis_name(s.axis))},
                    {"triggered", s.triggered},
                    {"within_budget", s.within_budget},
                    {"strength", to_json(s.strength)},
                    {"why", s.why},
                    {"metric", s.metric},
                    {"now", to_json(s.now)},
                    {"toward", s.toward},
                    {"gain_s", s.gain_s},
                    {"expect", s.expect()},
                    {"playbook", s.playbook}});
  auto budget = [](const AxisBudget& b) {
    return nlohmann::json{
        {"compute", b.slots[0]},
        {"memory", b.slots[1]},
        {"latency", b.slots[2]},
        {"gaps", {{"compute", b.gaps[0]}, {"memory", b.gaps[1]}, {"latency", b.gaps[2]}}},
        {"text", b.to_string()}};
  };
  return {{"formula", std::string(budget_formula_name(a.formula))},
          {"headroom", to_json(a.headroom)},
          {"budget", budget(a.budget)},
          {"budgets", {{"headroom", budget(a.by_headroom)}, {"kernelflow", budget(a.kernelflow)}}},
          {"suggestions", list},
          {"stop", a.stop},
          {"stop_reason", a.stop_reason},
          {"notes", a.notes}};
}

}  // namespace kopt
