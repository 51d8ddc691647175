#include "kopt/measure/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace kopt {
namespace {

HostTensor make(DType t, const std::vector<double>& values, std::vector<std::int64_t> shape = {}) {
  HostTensor h;
  h.name = "y";
  h.dtype = t;
  h.shape =
      shape.empty() ? std::vector<std::int64_t>{static_cast<std::int64_t>(values.size())} : shape;
  h.data.resize(values.size() * dtype_size(t));
  for (std::size_t i = 0; i < values.size(); ++i) store_from_double(h.data.data(), i, t, values[i]);
  return h;
}

TEST(Compare, ExactMatch) {
  auto a = make(DType::f32, {1, 2, 3});
  auto r = compare_tensors(a, a, {0, 0});
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.max_abs_err, 0.0);
  EXPECT_EQ(r.rel_l2_err, 0.0);
}

TEST(Compare, ToleranceIsAtolPlusRtolTimesReference) {
  auto ref = make(DType::f64, {100.0, 1.0, 0.0});
  auto got = make(DType::f64, {100.1, 1.0011, 0.0005});
  auto r = compare_tensors(got, ref, {1e-3, 1e-3});  // bounds 0.101, 0.002, 0.001
  EXPECT_TRUE(r.passed) << r.mismatches;
  auto strict = compare_tensors(got, ref, {1e-4, 1e-4});
  EXPECT_FALSE(strict.passed);
  EXPECT_EQ(strict.mismatches, 3u);
  EXPECT_NEAR(strict.max_abs_err, 0.1, 1e-9);
  EXPECT_NEAR(strict.max_rel_err, 1.1e-3, 1e-9);  // 0.0011 / 1.0 beats 0.1 / 100
  EXPECT_NEAR(strict.rel_l2_err,
              std::sqrt(0.01 + 0.0011 * 0.0011 + 0.0005 * 0.0005) / std::sqrt(10001.0), 1e-12);
}

TEST(Compare, ReportsFirstMismatchesWithMultiIndices) {
  auto ref = make(DType::f32, {0, 0, 0, 0, 0, 0}, {2, 3});
  auto got = make(DType::f32, {0, 1, 0, 0, 2, 0}, {2, 3});
  auto r = compare_tensors(got, ref, {0, 0}, 1);
  EXPECT_EQ(r.mismatches, 2u);
  ASSERT_EQ(r.first_mismatches.size(), 1u);
  EXPECT_EQ(r.first_mismatches[0].index, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(r.first_mismatches[0].got, 1.0);
  EXPECT_EQ(r.first_mismatches[0].expected, 0.0);
}

TEST(Compare, UnwrittenPoisonIsCaughtAndCounted) {
  auto ref = make(DType::f16, {1, 2, 3, 4});
  auto got = ref;
  Poison p = poison_for(DType::f16);
  std::uint16_t nan = static_cast<std::uint16_t>(p.pattern);
  std::memcpy(got.data.data() + 2 * 2, &nan, 2);
  auto r = compare_tensors(got, ref, default_tolerance(DType::f16));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.unwritten, 1u);
  EXPECT_EQ(r.nan_count, 1u);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_TRUE(std::isinf(r.max_abs_err));
}

// A tensor of several chunks (compared on every core): the counts add up, the first
// mismatches are the first in the tensor whichever chunk finishes first, and the error norms
// are those of one loop over the whole tensor.
TEST(Compare, ALargeTensorIsComparedInChunksAsOneLoopWould) {
  const std::size_t chunk = std::size_t{1} << 22, n = 2 * chunk + 5;
  std::vector<double> ref(n), got(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = got[i] = 1.0 + static_cast<double>(i % 7);
  // Mismatches at the ends of the first and last chunks, NaN and poison in the middle one.
  for (std::size_t i : {n - 1, n - 3, chunk - 1, std::size_t{2}}) got[i] += 0.5;
  got[chunk + 10] = -std::nan("");  // not the poison pattern
  auto a = make(DType::f32, ref), b = make(DType::f32, got);
  std::uint32_t poison = poison_for(DType::f32).pattern;
  std::memcpy(b.data.data() + 4 * (chunk + 20), &poison, 4);
  auto r = compare_tensors(b, a, {1e-3, 0}, 3);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 6u);  // four off, one NaN, one poison (itself a NaN)
  EXPECT_EQ(r.nan_count, 2u);
  EXPECT_EQ(r.unwritten, 1u);
  ASSERT_EQ(r.first_mismatches.size(), 3u);
  EXPECT_EQ(r.first_mismatches[0].flat, 2u);
  EXPECT_EQ(r.first_mismatches[1].flat, chunk - 1);
  EXPECT_EQ(r.first_mismatches[2].flat, chunk + 10);
  EXPECT_TRUE(std::isinf(r.max_abs_err));
  double diff_sq = 0, ref_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double g = static_cast<float>(got[i]), e = static_cast<float>(ref[i]);
    if (i == chunk + 10 || i == chunk + 20) continue;  // not finite
    diff_sq += (g - e) * (g - e);
    ref_sq += e * e;
  }
  EXPECT_NEAR(r.rel_l2_err, std::sqrt(diff_sq / ref_sq), 1e-12);
  EXPECT_NEAR(relative_l2(a, a), 0.0, 0.0);
  double sq = 0;
  for (double v : ref) sq += static_cast<float>(v) * static_cast<float>(v);
  EXPECT_NEAR(rms(a), std::sqrt(sq / static_cast<double>(n)), 1e-9);
}

TEST(Compare, NanMatchesNanAndInfMatchesSameInf) {
  auto ref = make(DType::f32, {NAN, INFINITY, -INFINITY});
  EXPECT_TRUE(compare_tensors(ref, ref, {0, 0}).passed);
  auto got = make(DType::f32, {NAN, -INFINITY, -INFINITY});
  auto r = compare_tensors(got, ref, {1, 1});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.inf_count, 2u);
}

TEST(Compare, IntegersAreExactByDefault) {
  auto ref = make(DType::i32, {5, 6, 7});
  auto got = make(DType::i32, {5, 6, 8});
  auto r = compare_tensors(got, ref, default_tolerance(DType::i32));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1u);
}

TEST(Compare, SizeMismatchNeverPasses) {
  auto ref = make(DType::f32, {1, 2, 3});
  auto got = make(DType::f32, {1, 2});
  EXPECT_FALSE(compare_tensors(got, ref, {1, 1}).passed);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(RelativeL2, AnF32OutputAgainstAnFp64ReferenceAcrossDtypes) {
  HostTensor exact = make(DType::f64, {1.0 / 3.0, 2.0, -4.0});
  HostTensor same = make(DType::f32, {1.0 / 3.0, 2.0, -4.0});  // f32 rounding only
  double rounding = relative_l2(same, exact);
  EXPECT_GT(rounding, 0.0);
  EXPECT_LT(rounding, 1e-7);
  HostTensor off = make(DType::f32, {1.0 / 3.0, 2.0, -4.004});
  EXPECT_NEAR(relative_l2(off, exact), 0.004 / std::sqrt(1.0 / 9.0 + 4.0 + 16.0), 1e-7);
  // NaN pairs are left out; nothing finite, or other counts: -1.
  HostTensor nan = make(DType::f32, {1.0 / 3.0, std::nan(""), -4.0});
  EXPECT_LT(relative_l2(nan, exact), 1e-7);
  EXPECT_EQ(relative_l2(make(DType::f32, {1.0}), exact), -1.0);
  EXPECT_EQ(relative_l2(make(DType::f32, {std::nan("")}), make(DType::f64, {1.0})), -1.0);
}

TEST(Rms, OverTheFiniteElements) {
  EXPECT_DOUBLE_EQ(rms(make(DType::f32, {3.0, -4.0})), std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(rms(make(DType::f32, {3.0, std::nan(""), -4.0})), std::sqrt(12.5));
  EXPECT_EQ(rms(make(DType::f32, {std::nan("")})), 0.0);
}

}  // namespace
}  // namespace kopt
