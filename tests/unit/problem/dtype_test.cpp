#include "kopt/problem/dtype.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kopt {
namespace {

TEST(DType, NamesRoundTrip) {
  for (const char* n : {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8"}) {
    auto t = parse_dtype(n);
    ASSERT_TRUE(t) << n;
    EXPECT_EQ(dtype_name(*t), n);
  }
  EXPECT_FALSE(parse_dtype("float32"));
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
}

TEST(DType, HalfConversionIsExactOnRepresentableValuesAndRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);                    // overflow -> inf
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);      // tie -> even (down)
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);      // tie -> even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  for (std::uint32_t h = 0; h < 0x7c00; ++h)
    EXPECT_EQ(float_to_half(half_to_float(static_cast<std::uint16_t>(h))), h);
}

TEST(DType, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 256), 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
}

TEST(DType, StoreAndLoadEveryType) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32,
                  DType::i16, DType::i8, DType::u8}) {
    std::vector<std::byte> buf(4 * dtype_size(t));
    store_from_double(buf.data(), 2, t, 3.0);
    EXPECT_EQ(load_as_double(buf.data(), 2, t), 3.0) << dtype_name(t);
  }
  std::vector<std::byte> buf(4);
  store_from_double(buf.data(), 0, DType::u8, 300.0);  // saturates
  EXPECT_EQ(load_as_double(buf.data(), 0, DType::u8), 255.0);
  store_from_double(buf.data(), 0, DType::i8, -2.6);  // rounds
  EXPECT_EQ(load_as_double(buf.data(), 0, DType::i8), -3.0);
}

TEST(DType, PoisonIsNanForFloatsAndDetectable) {
  for (DType t :
       {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    Poison p = poison_for(t);
    std::vector<std::byte> buf(dtype_size(t));
    for (std::size_t b = 0; b < buf.size(); ++b)
      buf[b] = static_cast<std::byte>((p.pattern >> (8 * (b % static_cast<std::size_t>(p.width)))) &
                                      0xff);
    EXPECT_TRUE(is_poison(buf.data(), 0, t)) << dtype_name(t);
    if (is_float(t)) {
      EXPECT_TRUE(std::isnan(load_as_double(buf.data(), 0, t))) << dtype_name(t);
    }
    store_from_double(buf.data(), 0, t, 1.0);
    EXPECT_FALSE(is_poison(buf.data(), 0, t)) << dtype_name(t);
  }
}

}  // namespace
}  // namespace kopt
