// KernelBench's review rule in kopt bench --vs-torch: a kernel over 10x faster than torch
// eager gets a review note (it neither fails nor flags the variant).
#include <gtest/gtest.h>

#include "kopt/measure/review.hpp"

namespace kopt {
namespace {

TEST(SpeedupReview, AboveTenTimesEagerIsReviewedAndBelowIsNot) {
  auto note = review_speedup_over_eager(10e-6, 250e-6);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("25.0x faster than torch eager (10.0 us against 250.0 us)"), std::string::npos) << *note;
  EXPECT_FALSE(review_speedup_over_eager(30e-6, 250e-6));   // 8.3x: a fusion eager lacks, plausibly
  EXPECT_FALSE(review_speedup_over_eager(25e-6, 250e-6));   // exactly 10x is not above it
  EXPECT_FALSE(review_speedup_over_eager(0, 250e-6));       // no time, no claim
  EXPECT_FALSE(review_speedup_over_eager(10e-6, 0));
}

}  // namespace
}  // namespace kopt
