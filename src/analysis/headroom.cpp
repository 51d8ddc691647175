#include "kopt/analysis/headroom.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kopt/core/units.hpp"

namespace kopt {
namespace {

struct Reading {
  double value = -1;  // a fraction, 0..1; -1: no reading
  std::string name;
};

// bottleneck.hpp's busiest unit, as a fraction of its peak.
Reading busiest_reading(const MetricValues& m,
                        std::initializer_list<std::pair<const char*, const char*>> units) {
  auto [name, pct] = busiest(m, units);
  if (pct < 0) return {};
  return {std::clamp(pct / 100.0, 0.0, 1.0), name};
}

const RooflinePoint* point(const Explanation& e, const std::string& basis) {
  for (const auto& p : e.roofline.points)
    if (p.basis == basis) return &p;
  return nullptr;
}

// A cost formula is believed when ncu's own count is at least half of it (or absent).
bool believed(const RooflinePoint* cost, const RooflinePoint* counted, bool bytes) {
  if (!cost) return false;
  if (!counted) return true;
  return bytes ? counted->bytes >= 0.5 * cost->bytes : counted->flops >= 0.5 * cost->flops;
}

std::string origin(const std::optional<Roof>& r) {
  return r && r->origin == "measured" ? "measured" : "spec";
}

// The fraction of the roof the kernel reaches on one axis of the roofline.
Reading roof_fraction(const Explanation& e, bool memory) {
  Reading r;
  const RooflinePoint* counted = point(e, "ncu counters");
  const RooflinePoint* cost = point(e, "cost formulas");
  const std::optional<Roof>& roof = memory ? e.roofline.memory : e.roofline.compute;
  std::string name = (memory ? std::string("DRAM") : e.precision) + " roof (" + origin(roof) + ")";
  auto pct = [&](const RooflinePoint* p) {
    return memory ? p->pct_memory_roof : p->pct_compute_roof;
  };
  if (roof && believed(cost, counted, memory)) {
    r = {pct(cost) / 100.0, name + ", cost formulas"};
  } else if (roof && counted && (memory ? counted->bytes : counted->flops) > 0) {
    r = {pct(counted) / 100.0, name + ", ncu counters"};
  } else if (memory) {
    r = busiest_reading(
        e.metrics, {{"DRAM (ncu's peak)", "dram__throughput.avg.pct_of_peak_sustained_elapsed"}});
  } else {
    r = busiest_reading(
        e.metrics,
        {{"FMA pipe (ncu's peak)", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"},
         {"tensor pipe (ncu's peak)",
          "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"}});
  }
  if (r.value >= 0) r.value = std::clamp(r.value, 0.0, 1.0);
  return r;
}

Reading busiest_unit(const MetricValues& m, bool memory) {
  if (memory)
    return busiest_reading(
        m, {{"DRAM", "dram__throughput.avg.pct_of_peak_sustained_elapsed"},
            {"L2", "lts__throughput.avg.pct_of_peak_sustained_elapsed"},
            {"L1/shared", "l1tex__throughput.avg.pct_of_peak_sustained_active"},
            {"memory units", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}});
  return busiest_reading(
      m, {{"SM", "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
          {"FMA pipe", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"},
          {"tensor pipe", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"}});
}

std::string pct(double f) {
  return fmt::format("{:.0f} %", 100 * f);
}

}  // namespace

Gaps Headroom::gaps() const {
  Gaps g;
  if (!bounding) return g;
  g.compute = of(Axis::compute).gap;
  g.memory = of(Axis::memory).gap;
  if (of(Axis::latency).busy) g.latency = of(Axis::latency).gap;
  g.near_peak = at_roof;
  return g;
}

Headroom compute_headroom(const Explanation& e, double time_s) {
  Headroom h;
  h.time_s = time_s > 0 ? time_s : e.time_s;
  Reading fc = roof_fraction(e, false), fm = roof_fraction(e, true);
  if (fc.value < 0 && fm.value < 0) {
    h.summary =
        "no roofline position (no cost formulas, counters or roofs): the headroom is unknown";
    return h;
  }
  bool memory = fm.value >= fc.value;
  Axis b = memory ? Axis::memory : Axis::compute;
  const Reading& rb = memory ? fm : fc;
  h.bounding = b;
  h.achieved = rb.value;
  h.headroom = 1 - rb.value;
  h.at_roof = rb.value >= k_at_roof;
  Reading uc = busiest_unit(e.metrics, false), um = busiest_unit(e.metrics, true);
  for (Axis a : {Axis::compute, Axis::memory}) {
    auto& x = h.axes[static_cast<int>(a)];
    const Reading& f = a == Axis::memory ? fm : fc;
    const Reading& u = a == Axis::memory ? um : uc;
    if (f.value >= 0) {
      x.achieved = f.value;
      x.roof = f.name;
    }
    if (u.value >= 0) {
      x.busy = u.value;
      x.unit = u.name;
    }
    // Without utilisation metrics (no counters) the roofline alone shares the headroom out:
    // the bounding axis all of it, the other as near to its roof as it is.
    bool blind = uc.value < 0 && um.value < 0;
    x.gap = !blind   ? h.headroom * u.value * (u.value >= 0)
            : a == b ? h.headroom
                     : h.headroom * std::max(f.value, 0.0) / std::max(rb.value, 1e-9);
    x.gain_s = x.gap * h.time_s;
    std::string where =
        f.value >= 0 ? fmt::format("at {} of the {}", pct(f.value), f.name) : "no roof position";
    std::string busy =
        u.value >= 0 ? fmt::format("{} busy {}", u.name, pct(u.value)) : "no utilisation metrics";
    x.text = a == b ? fmt::format("{} (bounding): at most {} to gain; {}", where,
                                  human_time(h.headroom * h.time_s), busy)
                    : fmt::format("{}; {}: {} of the headroom", where, busy,
                                  pct(u.value >= 0 ? u.value : 0));
  }
  auto stalls = stall_shares(e.metrics);
  auto& al = h.axes[static_cast<int>(Axis::latency)];
  if (!stalls.empty()) {
    double s = std::clamp(stalls.front().second, 0.0, 1.0);
    double idle = 1 - std::max({uc.value, um.value, 0.0});
    al.busy = s;
    al.unit = stalls.front().first + " stalls";
    al.gap = h.headroom * s * idle;
    al.gain_s = al.gap * h.time_s;
    al.text = fmt::format(
        "warps wait on {} {} of the time between issues while the busiest unit is {} busy: at most "
        "{} "
        "to gain by hiding latency",
        stalls.front().first, pct(s), pct(1 - idle), human_time(al.gain_s));
  }
  h.summary =
      fmt::format("{}-bound at {} of the {}: at most {} to gain{}", axis_name(b), pct(rb.value),
                  rb.name, human_time(h.headroom * h.time_s),
                  h.at_roof ? fmt::format(", at or past {} of the roof", pct(k_at_roof)) : "");
  return h;
}

std::string_view budget_formula_name(BudgetFormula f) {
  return f == BudgetFormula::headroom ? "headroom" : "kernelflow";
}

std::optional<BudgetFormula> parse_budget_formula(std::string_view name) {
  if (name == "headroom") return BudgetFormula::headroom;
  if (name == "kernelflow") return BudgetFormula::kernelflow;
  return std::nullopt;
}

MetricValues advice_metrics(const Explanation& e, const Headroom& h) {
  MetricValues d = trigger_metrics(e.metrics);
  if (h.bounding == Axis::memory) d["kopt__memory_roof_pct"] = 100 * h.achieved;
  if (h.bounding == Axis::compute) d["kopt__compute_roof_pct"] = 100 * h.achieved;
  d["kopt__headroom"] = h.headroom;
  return d;
}

nlohmann::json to_json(const Headroom& h) {
  nlohmann::json axes = nlohmann::json::object();
  for (Axis a : {Axis::compute, Axis::memory, Axis::latency}) {
    const auto& x = h.of(a);
    axes[std::string(axis_name(a))] = {{"achieved", to_json(x.achieved)},
                                       {"busy", to_json(x.busy)},
                                       {"gap", x.gap},
                                       {"gain_s", x.gain_s},
                                       {"roof", x.roof},
                                       {"unit", x.unit},
                                       {"text", x.text}};
  }
  return {{"bounding", h.bounding ? nlohmann::json(std::string(axis_name(*h.bounding)))
                                  : nlohmann::json(nullptr)},
          {"achieved", h.achieved},
          {"headroom", h.headroom},
          {"gain_s", h.headroom * h.time_s},
          {"time_s", h.time_s},
          {"at_roof", h.at_roof},
          {"summary", h.summary},
          {"axes", axes}};
}

}  // namespace kopt
