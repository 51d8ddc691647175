#include "kopt/analysis/method_selection.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kopt {

MetricValues trigger_metrics(const MetricValues& m) {
  MetricValues d = m;
  for (const auto& [reason, share] : stall_shares(m)) d["kopt__stall_share_" + reason] = share;
  Gaps g = roofline_gaps(m);
  if (g.compute) d["kopt__gap_compute"] = *g.compute;
  if (g.memory) d["kopt__gap_memory"] = *g.memory;
  if (g.latency) d["kopt__gap_latency"] = *g.latency;
  auto ld = metric(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum");
  auto st = metric(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum");
  if (ld || st) d["kopt__local_sectors"] = ld.value_or(0) + st.value_or(0);
  // The LSU pipe's issue share, in a kernel whose tensor pipe runs (at least 1 % active: an
  // f32 kernel reads 0.02 % there): what fragment loads take from the MMAs; absent for a kernel
  // without tensor-core work, so it triggers nothing there.
  auto tensor = metric(m, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
  if (auto lsu = metric(m, "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active");
      lsu && tensor && *tensor >= 1)
    d["kopt__tensor_kernel_lsu_pct"] = *lsu;
  return d;
}

double trigger_strength(const Trigger& t, double value) {
  return std::clamp((value - t.good) / (t.bad - t.good), 0.0, 1.0);
}

const Trigger* strongest_trigger(const Method& m, const MetricValues& derived) {
  if (!m.trigger) return nullptr;
  const Trigger* best = &*m.trigger;
  std::optional<double> most;
  auto consider = [&](const Trigger& t) {
    if (auto v = metric(derived, t.metric); v && (!most || trigger_strength(t, *v) > *most)) {
      most = trigger_strength(t, *v);
      best = &t;
    }
  };
  consider(*m.trigger);
  for (const auto& t : m.more_triggers) consider(t);
  return best;
}

std::optional<double> method_strength(const Method& m, const MetricValues& derived) {
  const Trigger* t = strongest_trigger(m, derived);
  if (!t) return std::nullopt;
  auto v = metric(derived, t->metric);
  if (!v) return std::nullopt;
  return trigger_strength(*t, *v);
}

namespace {

bool has_features(const Method& m, int sm) {
  if (sm == 0) return m.requires_features.empty();  // not a CUDA target: no CUDA hardware features
  auto have = device_features(sm);
  return std::all_of(
      m.requires_features.begin(), m.requires_features.end(),
      [&](const std::string& f) { return std::find(have.begin(), have.end(), f) != have.end(); });
}

}  // namespace

bool applicable(const Method& m, const SelectionContext& ctx) {
  return (m.min_sm == 0 || (ctx.sm > 0 && ctx.sm >= m.min_sm)) && has_features(m, ctx.sm) &&
         (!ctx.available || ctx.available->contains(m.id));
}

bool discredited(const SelectionContext& ctx, const std::string& id) {
  auto it = ctx.history.find(id);
  return it != ctx.history.end() && it->second != MethodOutcome::effective;
}

namespace {

// Triggered, applicable, not discredited: sorted by axis, priority, strength.
std::vector<MethodCandidate> triggered(const SelectionContext& ctx) {
  std::vector<MethodCandidate> out;
  for (const auto& m : ctx.catalog->methods) {
    auto s = method_strength(m, ctx.metrics);
    if (!s || *s < k_triggered || !applicable(m, ctx)) continue;
    const Trigger& t = *strongest_trigger(m, ctx.metrics);
    out.push_back(MethodCandidate{m.id, m.axis, m.priority, *s,
                                  fmt::format("{} = {:.4g} (good {:g}, bad {:g})", t.metric,
                                              *metric(ctx.metrics, t.metric), t.good, t.bad)});
  }
  auto pref = [&](const std::string& m) {
    auto it = ctx.preference.find(m);
    return it == ctx.preference.end() ? 0.5 : it->second;
  };
  std::stable_sort(out.begin(), out.end(), [&](const MethodCandidate& a, const MethodCandidate& b) {
    if (a.axis != b.axis) return a.axis < b.axis;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.strength != b.strength) return a.strength > b.strength;
    return pref(a.method) > pref(b.method);
  });
  return out;
}

}  // namespace

std::vector<MethodCandidate> suggest_methods(const SelectionContext& ctx) {
  std::vector<MethodCandidate> out;
  std::array<int, 3> used{0, 0, 0};
  for (const auto& c : triggered(ctx)) {
    int a = static_cast<int>(c.axis);
    if (discredited(ctx, c.method) || used[a] >= ctx.budget.slots[a]) continue;
    ++used[a];
    out.push_back(c);
  }
  return out;
}

std::vector<MethodCandidate> untriggered_candidates(SelectionContext& ctx, std::size_t limit) {
  std::vector<MethodCandidate> out;
  if (!ctx.available) return out;
  std::vector<const Method*> open;
  for (const auto& id : *ctx.available)
    if (const Method* m = ctx.catalog->find(id); m && !ctx.history.contains(id)) open.push_back(m);
  std::stable_sort(open.begin(), open.end(),
                   [](const Method* a, const Method* b) { return a->priority < b->priority; });
  for (const Method* m : open) {
    if (out.size() >= limit) break;
    int a = static_cast<int>(m->axis);
    ctx.budget.slots[a] = std::max(ctx.budget.slots[a], 1);
    out.push_back({m->id, m->axis, m->priority, 0.0,
                   "untriggered: no counters to test its trigger; the kernel can switch it and it "
                   "has no verdict yet"});
  }
  return out;
}

std::vector<ValidationIssue> validate_methods(const SelectionContext& ctx, const MethodSet& set) {
  std::vector<ValidationIssue> issues;
  std::array<int, 3> per_axis{0, 0, 0};
  std::array<int, 3> worst_priority{0, 0, 0};  // the lowest priority chosen on each axis
  for (const auto& id : set.methods) {
    const Method* m = ctx.catalog->find(id);
    if (!m) {
      issues.push_back({"unknown_method", id, "no method '" + id + "' in the catalog"});
      continue;
    }
    int a = static_cast<int>(m->axis);
    ++per_axis[a];
    worst_priority[a] = std::max(worst_priority[a], m->priority);
    if ((m->min_sm > 0 && ctx.sm > 0 && ctx.sm < m->min_sm) || !has_features(*m, ctx.sm))
      issues.push_back(
          {"not_applicable", id,
           fmt::format("needs sm_{}{}, the target is sm_{}", m->min_sm,
                       m->requires_features.empty()
                           ? ""
                           : " and " + fmt::format("{}", fmt::join(m->requires_features, ", ")),
                       ctx.sm)});
    if (discredited(ctx, id) && !set.overrides.contains(id))
      issues.push_back(
          {"reuse_without_override", id,
           fmt::format("classified {} in an earlier iteration; reuse needs an override",
                       name_of(ctx.history.at(id)))});
  }
  if (static_cast<int>(set.methods.size()) > k_budget_slots)
    issues.push_back(
        {"over_budget", "",
         fmt::format("{} methods, at most {} per iteration", set.methods.size(), k_budget_slots)});
  for (Axis axis : {Axis::compute, Axis::memory, Axis::latency}) {
    int a = static_cast<int>(axis);
    if (per_axis[a] > ctx.budget.slots[a])
      issues.push_back({"over_budget", "",
                        fmt::format("{} {} methods, the budget allows {} (gap {:.2f})", per_axis[a],
                                    axis_name(axis), ctx.budget.slots[a], ctx.budget.gaps[a])});
  }
  // A triggered method that ranks above one chosen on its axis needs a reason to be skipped.
  for (const auto& c : triggered(ctx)) {
    int a = static_cast<int>(c.axis);
    bool chosen = std::find(set.methods.begin(), set.methods.end(), c.method) != set.methods.end();
    if (chosen || per_axis[a] == 0 || c.priority >= worst_priority[a] || discredited(ctx, c.method))
      continue;
    if (!set.skip_reasons.contains(c.method))
      issues.push_back(
          {"skipped_without_reason", c.method,
           fmt::format("triggered ({}) and ranks above a chosen {} method; say why it is skipped",
                       c.why, axis_name(c.axis))});
  }
  return issues;
}

}  // namespace kopt
