#include "kopt/analysis/axis_budget.hpp"

#include <gtest/gtest.h>

namespace kopt {
namespace {

std::array<int, 3> slots(double c, double m, double l) {
  return allocate_budget(c, m, l).slots;
}

TEST(AxisBudget, ProportionalFloorThenLargestRemainder) {
  EXPECT_EQ(slots(0.6, 0.3, 0.1), (std::array<int, 3>{2, 1, 0}));  // quotas 1.8, 0.9, 0.3
  EXPECT_EQ(slots(0.5, 0.5, 0.5), (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(slots(0.2, 0.7, 0.4), (std::array<int, 3>{0, 2, 1}));  // quotas 0.46, 1.62, 0.92
}

TEST(AxisBudget, AnAxisUnderTenPercentGetsNothingEvenFromTheRemainder) {
  // The skill this replaces rounds proportional shares of all three axes and hands a
  // slot to memory here; memory's gap is under 0.10, so it gets none.
  EXPECT_EQ(slots(0.5, 0.05, 0.3), (std::array<int, 3>{2, 0, 1}));
  EXPECT_EQ(slots(0.3, 0.099, 0.1), (std::array<int, 3>{2, 0, 1}));
  EXPECT_EQ(slots(0.3, 0.10, 0.1), (std::array<int, 3>{2, 1, 0}));  // 0.10 is eligible
}

TEST(AxisBudget, AtMostTwoPerAxisEvenWhenSlotsAreLeft) {
  EXPECT_EQ(slots(0.9, 0.02, 0.05), (std::array<int, 3>{2, 0, 0}));  // one eligible axis: 2, not 3
  EXPECT_EQ(
      slots(0.9, 0.1, 0.1),
      (std::array<int, 3>{2, 1, 0}));  // tie on remainder and gap: compute, memory, latency order
}

TEST(AxisBudget, NearPeakGetsNoSlots) {
  AxisBudget b = allocate_budget(0.05, 0.08, 0.02);
  EXPECT_EQ(b.total(), 0);
  Gaps missing;  // no profile: no evidence, no slots
  EXPECT_EQ(allocate_budget(missing).total(), 0);
  EXPECT_EQ(allocate_budget(0.6, 0.3, 0.1).to_string(), "compute 2, memory 1, latency 0");
}

}  // namespace
}  // namespace kopt
