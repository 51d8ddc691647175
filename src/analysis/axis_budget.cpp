#include "kopt/analysis/axis_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kopt {

std::string AxisBudget::to_string() const {
  return fmt::format("compute {}, memory {}, latency {}", slots[0], slots[1], slots[2]);
}

AxisBudget allocate_budget(double gc, double gm, double gl) {
  AxisBudget b;
  b.gaps = {gc, gm, gl};
  double sum = 0;
  for (double g : b.gaps)
    if (g >= k_budget_min_gap) sum += g;
  if (sum <= 0) return b;
  std::array<double, 3> quota{};
  for (int a = 0; a < 3; ++a) {
    if (b.gaps[a] < k_budget_min_gap) continue;
    quota[a] = k_budget_slots * b.gaps[a] / sum;
    b.slots[a] = std::min(k_budget_max_per_axis, static_cast<int>(std::floor(quota[a] + 1e-9)));
  }
  // Largest remainder, eligible axes with room only; ties go to the larger gap, then to
  // compute, memory, latency in that order.
  while (b.total() < k_budget_slots) {
    int pick = -1;
    for (int a = 0; a < 3; ++a) {
      if (b.gaps[a] < k_budget_min_gap || b.slots[a] >= k_budget_max_per_axis) continue;
      auto key = [&](int x) { return std::pair{quota[x] - b.slots[x], b.gaps[x]}; };
      if (pick < 0 || key(a) > key(pick)) pick = a;
    }
    if (pick < 0) break;  // every eligible axis is full
    ++b.slots[pick];
  }
  return b;
}

AxisBudget allocate_budget(const Gaps& g) {
  return allocate_budget(g.compute.value_or(0), g.memory.value_or(0), g.latency.value_or(0));
}

}  // namespace kopt
