#include "kopt/problem/tensor_data.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace kopt {
namespace {

TensorSpec spec(const std::string& name, DType t, InitSpec init) {
  TensorSpec s;
  s.name = name;
  s.dtype = t;
  s.init = init;
  return s;
}

TEST(TensorData, SameSeedSameBytesOtherSeedOtherBytes) {
  for (DType t :
       {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    InitSpec init = is_float(t) ? InitSpec{InitKind::normal, 0.0, 1.0}
                                : InitSpec{InitKind::randint, 0.0, 100.0};
    auto s = spec("x", t, init);
    auto a = generate_tensor(s, {64, 33}, 7);
    auto b = generate_tensor(s, {64, 33}, 7);
    auto c = generate_tensor(s, {64, 33}, 8);
    EXPECT_EQ(a.data, b.data) << dtype_name(t);
    EXPECT_NE(a.data, c.data) << dtype_name(t);
    EXPECT_EQ(a.bytes(), 64u * 33u * dtype_size(t));
  }
}

TEST(TensorData, TensorsWithTheSameSpecButDifferentNamesDiffer) {
  auto a = generate_tensor(spec("a", DType::f32, {}), {1000}, 1);
  auto b = generate_tensor(spec("b", DType::f32, {}), {1000}, 1);
  EXPECT_NE(a.data, b.data);
}

TEST(TensorData, InitKindsProduceTheirRanges) {
  auto u = generate_tensor(spec("u", DType::f32, {InitKind::uniform, 2.0, 3.0}), {10000}, 1);
  auto r = generate_tensor(spec("r", DType::i32, {InitKind::randint, -5.0, 5.0}), {10000}, 1);
  auto ar = generate_tensor(spec("a", DType::f64, {InitKind::arange, 10.0, 0.5}), {100}, 1);
  auto n = generate_tensor(spec("n", DType::f64, {InitKind::normal, 1.0, 2.0}), {100000}, 1);
  double lo = 1e9, hi = -1e9, sum = 0, sq = 0;
  bool any_nonzero = false;
  for (std::size_t i = 0; i < 10000; ++i) {
    double v = load_as_double(u.data.data(), i, DType::f32);
    EXPECT_GE(v, 2.0);
    EXPECT_LT(v, 3.0);
    double k = load_as_double(r.data.data(), i, DType::i32);
    lo = std::min(lo, k);
    hi = std::max(hi, k);
    any_nonzero = any_nonzero || k != 0;
  }
  EXPECT_EQ(lo, -5.0);
  EXPECT_EQ(hi, 4.0);
  EXPECT_TRUE(any_nonzero);
  EXPECT_EQ(load_as_double(ar.data.data(), 3, DType::f64), 11.5);
  for (std::size_t i = 0; i < 100000; ++i) {
    double v = load_as_double(n.data.data(), i, DType::f64);
    sum += v;
    sq += v * v;
  }
  double mean = sum / 100000, var = sq / 100000 - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
}

TEST(TensorData, PoisonedTensorIsAllPoison) {
  auto t = poisoned_tensor(spec("y", DType::bf16, {}), {17});
  for (std::size_t i = 0; i < 17; ++i) EXPECT_TRUE(is_poison(t.data.data(), i, DType::bf16));
}

TEST(TensorData, Unflatten) {
  EXPECT_EQ(unflatten(0, {4, 5, 6}), (std::vector<std::int64_t>{0, 0, 0}));
  EXPECT_EQ(unflatten(5 * 6 + 2 * 6 + 3, {4, 5, 6}), (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace kopt
