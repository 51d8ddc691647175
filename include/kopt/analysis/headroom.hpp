#pragma once
// Headroom: how far a kernel is from the roofline that bounds it, as a fraction and as time,
// and the gaps the axis budget follows.
//
//   f_m  the byte rate against kopt's memory roof (measured ceilings, else the spec); the
//        cost formulas' bytes when ncu's DRAM bytes are at least half of them (writes still
//        in L2 when a kernel ends are not DRAM traffic yet; a formula that claims more is
//        not believed), else ncu's DRAM bytes, else ncu's DRAM throughput;
//   f_c  the FLOP rate against the compute roof of the kernel's precision, the same way
//        (else the FMA or tensor pipe utilisation);
//   b    the bounding axis: the larger of the two; H = 1 − f_b the headroom; the kernel can
//        gain at most H × t, and at f_b >= 0.9 kopt recommends stopping.
//
// The budget's gaps share H out by what the profile says is busy:
//   Δc = H × u_c       u_c the busiest SM unit (SM throughput, FMA or tensor pipe);
//   Δm = H × u_m       u_m the busiest memory unit (DRAM, L2, L1/shared);
//   Δl = H × s × (1 − max(u_c, u_m))   s the largest stall share: warps that wait while no
//                      unit is busy; a kernel saturating a unit or a roof is not latency-bound
//                      however long its warps wait.
// A busy unit on a kernel far from its roof does work the roofline does not count (wasted
// traffic, instruction overhead): its axis's methods cut that work. Without counters (no
// utilisation at all) the bounding axis gets H and the other H × f_o / f_b. KernelFlow's gaps
// (roofline_gaps: 1 − utilisation, the stall share) stay available ("kernelflow" formula).
#include <array>
#include <optional>
#include <string>

#include "kopt/analysis/axis_budget.hpp"
#include "kopt/analysis/explanation.hpp"
#include "kopt/analysis/method_selection.hpp"

namespace kopt {

inline constexpr double k_at_roof = 0.90;  // at or past 90 % of the bounding roof: stop

struct AxisHeadroom {
  std::optional<double> achieved;  // fraction of the axis's roof reached, 0..1 (latency: none)
  std::optional<double> busy;      // the utilisation behind the gap (latency: the stall share)
  double gap = 0;                  // its share of the headroom, for the budget
  double gain_s = 0;               // at most this much time to gain by working on the axis
  std::string roof;                // "DRAM roof (spec)", "fp32 roof (measured)"
  std::string unit;  // the busiest unit: "L1/shared", "FMA pipe", "long_scoreboard stalls"
  std::string text;  // one sentence a person reads
};

struct Headroom {
  std::array<AxisHeadroom, 3> axes;  // indexed by Axis
  std::optional<Axis> bounding;      // nullopt: no throughput metrics at all
  double achieved = 0;               // f_b
  double headroom = 1;               // H
  double time_s = 0;                 // the time the gains are fractions of
  bool at_roof = false;              // f_b >= k_at_roof
  std::string summary;  // "memory-bound at 84 % of the DRAM roof: at most 30 µs to gain"
  const AxisHeadroom& of(Axis a) const { return axes[static_cast<int>(a)]; }
  Gaps gaps() const;  // the headroom gaps as a Gaps record
};

// `time_s`: the time to express gains in (the champion's median); 0 takes the explanation's.
Headroom compute_headroom(const Explanation& e, double time_s = 0);

enum class BudgetFormula { headroom, kernelflow };
std::string_view budget_formula_name(BudgetFormula f);
std::optional<BudgetFormula> parse_budget_formula(std::string_view name);

// The trigger metrics (method_selection.hpp) and the roofline's: kopt__memory_roof_pct on a
// memory-bound kernel, kopt__compute_roof_pct on a compute-bound one, kopt__headroom.
MetricValues advice_metrics(const Explanation& e, const Headroom& h);

nlohmann::json to_json(const Headroom& h);

}  // namespace kopt
