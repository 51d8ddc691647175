#pragma once
// How many methods an iteration may try on each axis, from the roofline gaps: 3 slots in
// proportion to Δc, Δm and Δl, at most 2 per axis, none for an axis whose gap is below 0.10.
// Slots are floored, then the remainder goes to the largest fractional parts among the
// eligible axes only (never to an axis under 0.10, which a proportional rounding would do).
#include <array>
#include <string>

#include "kopt/analysis/method_catalog.hpp"
#include "kopt/analysis/roofline.hpp"

namespace kopt {

inline constexpr int k_budget_slots = 3;
inline constexpr int k_budget_max_per_axis = 2;
inline constexpr double k_budget_min_gap = 0.10;

struct AxisBudget {
  std::array<int, 3> slots{0, 0, 0};  // indexed by Axis
  std::array<double, 3> gaps{0, 0, 0};
  int of(Axis a) const { return slots[static_cast<int>(a)]; }
  int total() const { return slots[0] + slots[1] + slots[2]; }
  std::string to_string() const;  // "compute 2, memory 0, latency 1"
};

AxisBudget allocate_budget(double gap_compute, double gap_memory, double gap_latency);
// Missing gaps count as 0 (no evidence, no slots).
AxisBudget allocate_budget(const Gaps& gaps);

}  // namespace kopt
