// The FP8 ceiling's operands: the float to e4m3 encoder on exact values, rounding and the
// edges of the format, and the random operands it makes (finite, in [-1, 1], not degenerate).
#include "kopt/backend/cuda/fp8_ceiling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace kopt {
namespace {

using cuda::e4m3_from_float;

TEST(E4m3, ExactValuesHaveTheirBitPatterns) {
  EXPECT_EQ(e4m3_from_float(1.0f), 0x38);
  EXPECT_EQ(e4m3_from_float(-2.0f), 0xC0);
  EXPECT_EQ(e4m3_from_float(0.5f), 0x30);
  EXPECT_EQ(e4m3_from_float(448.0f), 0x7E);
  EXPECT_EQ(e4m3_from_float(-448.0f), 0xFE);
  EXPECT_EQ(e4m3_from_float(1.125f), 0x39);  // 1 + 1/8: the last mantissa bit
  EXPECT_EQ(e4m3_from_float(0.0f), 0x00);
  EXPECT_EQ(e4m3_from_float(-0.0f), 0x80);
  EXPECT_EQ(e4m3_from_float(0x1p-6f), 0x08);      // the smallest normal
  EXPECT_EQ(e4m3_from_float(0x1p-9f), 0x01);      // the smallest subnormal
  EXPECT_EQ(e4m3_from_float(7 * 0x1p-9f), 0x07);  // the largest subnormal
}

TEST(E4m3, RoundsToNearestTiesToEven) {
  EXPECT_EQ(e4m3_from_float(1.0625f), 0x38);  // halfway between 1 and 1.125: even mantissa 0
  EXPECT_EQ(e4m3_from_float(1.1875f), 0x3A);  // halfway between 1.125 and 1.25: even mantissa 2
  EXPECT_EQ(e4m3_from_float(1.07f), 0x39);
  EXPECT_EQ(e4m3_from_float(1.9375f), 0x40);   // halfway between 1.875 and 2: the even one is 2
  EXPECT_EQ(e4m3_from_float(0x1p-10f), 0x00);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(e4m3_from_float(15 * 0x1p-10f), 0x08);  // 7.5 subnormal steps: the smallest normal
}

TEST(E4m3, SaturatesWithoutInfinityAndKeepsNan) {
  EXPECT_EQ(e4m3_from_float(460.0f), 0x7E);
  EXPECT_EQ(e4m3_from_float(1e30f), 0x7E);
  EXPECT_EQ(e4m3_from_float(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::quiet_NaN()), 0x7F);
}

TEST(E4m3, RandomOperandsAreFiniteAndSpreadOverMinusOneToOne) {
  const auto v = cuda::random_e4m3(100003, 7);  // not a multiple of 4: the tail is filled too
  ASSERT_EQ(v.size(), 100003u);
  std::set<std::uint8_t> distinct;
  std::size_t negative = 0, zero = 0;
  for (std::uint8_t b : v) {
    // Magnitude bits order e4m3 magnitudes; 0x38 is 1.0, so none is NaN either.
    EXPECT_LE(b & 0x7F, 0x38) << "byte " << int(b) << " is outside [-1, 1]";
    negative += (b & 0x80) != 0;
    zero += (b & 0x7F) == 0;
    distinct.insert(b);
  }
  EXPECT_NEAR(static_cast<double>(negative) / v.size(), 0.5, 0.02);
  EXPECT_LT(zero, v.size() / 100);   // real bit patterns, not zeros
  EXPECT_GT(distinct.size(), 100u);  // most of the 2 * 57 codes in [-1, 1]
  EXPECT_EQ(cuda::random_e4m3(64, 7), cuda::random_e4m3(64, 7));
  EXPECT_NE(cuda::random_e4m3(64, 7), cuda::random_e4m3(64, 8));
}

}  // namespace
}  // namespace kopt
