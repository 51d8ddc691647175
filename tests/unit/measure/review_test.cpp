// KernelBench's review rule in kopt bench --vs-torch: a kernel over 10x faster than torch
// eager gets a review note (it neither fails nor flags the variant).
#include "kopt/measure/review.hpp"

#include <gtest/gtest.h>

namespace kopt {
namespace {

TEST(SpeedupReview, AboveTenTimesEagerIsReviewedAndBelowIsNot) {
  auto note = review_speedup_over_eager(10e-6, 250e-6);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("25.0x faster than torch eager (10.0 us against 250.0 us)"),
            std::string::npos)
      << *note;
  EXPECT_FALSE(review_speedup_over_eager(30e-6, 250e-6));  // 8.3x: a fusion eager lacks, plausibly
  EXPECT_FALSE(review_speedup_over_eager(25e-6, 250e-6));  // exactly 10x is not above it
  EXPECT_FALSE(review_speedup_over_eager(0, 250e-6));      // no time, no claim
  EXPECT_FALSE(review_speedup_over_eager(10e-6, 0));
}

TEST(NcuCrossCheck, ADisagreementPastAQuarterIsReported) {
  EXPECT_FALSE(review_against_ncu(100e-6, 110e-6));  // 10 %: clocks, a launch's spread
  EXPECT_FALSE(review_against_ncu(100e-6, 80e-6));   // 25 % of the smaller: not past it
  auto slow_ncu =
      review_against_ncu(50e-6, 100e-6);  // kopt's median half of ncu's: work skipped under timing?
  ASSERT_TRUE(slow_ncu);
  EXPECT_NE(slow_ncu->find("kopt's median 50.0 us and ncu's gpu__time_duration 100.0 us"),
            std::string::npos)
      << *slow_ncu;
  EXPECT_NE(slow_ncu->find("differ by 100 %"), std::string::npos) << *slow_ncu;
  EXPECT_TRUE(review_against_ncu(100e-6, 50e-6));
  EXPECT_FALSE(review_against_ncu(0, 50e-6));
}

}  // namespace
}  // namespace kopt
