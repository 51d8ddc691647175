// Inputs drawn on the device (backend/cuda/device_draw.hpp) have the bytes the host draws
// (draw_values): every dtype, every kind, recipes whose values overflow a dtype, infinities
// and NaN, and a size that is no multiple of the block. The element draw is one source
// compiled twice (src/problem/draw_element.inc); this is where the two compilers meet.
#include "backend/cuda/device_draw.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/prepared_launch.hpp"
#include "backend/cuda/timer_helpers.hpp"
#include "gpu_context.hpp"
#include "gpu_skip.hpp"
#include "kopt/problem/dtype.hpp"
#include "kopt/problem/tensor_draw.hpp"

namespace kopt::cuda {
namespace {

// Device 0's context and the timer helpers' draw (the module unloaded before the context goes).
class DeviceDraw : public ::testing::Test {
 protected:
  void SetUp() override {
    KOPT_SKIP_WITHOUT_GPU();
    m_gpu.emplace();
    ASSERT_TRUE(m_gpu->ok()) << m_gpu->error();
    m_helpers = build_timer_helpers(m_gpu->api(), m_gpu->arch());
    ASSERT_TRUE(m_helpers.draw);
  }
  void TearDown() override { m_helpers = TimerHelpers{}; }
  const DriverApi& api() const { return m_gpu->api(); }
  InputDraw input_draw() const { return {m_helpers.draw, m_gpu->sm_count()}; }

 private:
  std::optional<PrimaryContext> m_gpu;
  TimerHelpers m_helpers;
};

TEST_F(DeviceDraw, EveryDtypeAndKindHasTheHostsBits) {
  const DriverApi& api = this->api();
  const InputDraw draw = input_draw();
  {
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
      InitKind kind;
      double a, b;
    };
    const Case cases[] = {
        {InitKind::normal, 0.0, 1.0},    {InitKind::normal, -2.5, 300.0},
        {InitKind::uniform, -3.0, 5.0},  {InitKind::uniform, -1e6, 1e6},  // past i8 and f16
        {InitKind::uniform, -inf, inf},  {InitKind::randint, -200.0, 300.0},
        {InitKind::randint, 0.0, 2.0},   {InitKind::arange, -7.0, 0.37},
        {InitKind::arange, 0.0, 1e13},   {InitKind::constant, std::nan(""), 0.0},
        {InitKind::constant, -inf, 0.0}, {InitKind::constant, 65519.0, 0.0},  // f16's rounding
        {InitKind::constant, 1e-8, 0.0}};                                     // f16 subnormal
    const DType dtypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64,
                            DType::i32, DType::i16, DType::i8,  DType::u8};
    const std::size_t n = (std::size_t{1} << 20) + 3;
    std::uint64_t key = 0x5eed;
    for (const Case& c : cases)
      for (DType dtype : dtypes) {
        JobTensor t;
        t.name = "x";
        t.dtype = dtype;
        t.role = Role::input;
        t.bytes = n * dtype_size(dtype);
        t.draw = DrawRecipe{c.kind, c.a, c.b, key++ * 0x9e3779b97f4a7c15ull, dtype};
        std::vector<std::byte> host(t.bytes), device(t.bytes);
        draw_values(*t.draw, host.data(), 0, n);
        CUdeviceptr p = 0;
        ASSERT_EQ(api.mem_alloc(&p, t.bytes), CUDA_SUCCESS);
        DeviceBuffer buffer(&api, p);
        ASSERT_EQ(draw_on_device(api, draw, p, t), CUDA_SUCCESS);
        ASSERT_EQ(api.ctx_synchronize(), CUDA_SUCCESS);
        ASSERT_EQ(api.memcpy_dtoh(device.data(), p, t.bytes), CUDA_SUCCESS);
        const std::size_t w = dtype_size(dtype);
        std::size_t differ = 0, first = n;
        for (std::size_t i = 0; i < n; ++i)
          if (std::memcmp(host.data() + i * w, device.data() + i * w, w) != 0) {
            if (differ++ == 0) first = i;
          }
        EXPECT_EQ(differ, 0u) << init_kind_name(c.kind) << "(" << c.a << ", " << c.b << ") as "
                              << dtype_name(dtype) << ": first at [" << first << "], host "
                              << (first < n ? load_as_double(host.data(), first, dtype) : 0)
                              << ", device "
                              << (first < n ? load_as_double(device.data(), first, dtype) : 0);
      }
  }
}

// A timer's mixed secret sample (output_verifier.hpp): one recipe drawn whole, a second over it
// where kopt_mix_takes says, on the timer's own stream: the host's mix_takes picks the same
// elements, about half of them.
TEST_F(DeviceDraw, AMixTakesTheElementsTheHostSays) {
  const DriverApi& api = this->api();
  const InputDraw draw = input_draw();
  {
    const std::size_t n = (std::size_t{1} << 22) + 5;
    const DrawRecipe seed{InitKind::normal, 0.0, 1.0, 0x1234, DType::bf16};
    const DrawRecipe secret{InitKind::uniform, -4.0, 4.0, 0x4000000000000777ull, DType::bf16};
    const std::uint64_t mix = 0x9b05688c2b3e6c1full;
    const std::size_t bytes = n * 2;
    std::vector<std::byte> a(bytes), b(bytes), want(bytes), got(bytes);
    draw_values(seed, a.data(), 0, n);
    draw_values(secret, b.data(), 0, n);
    std::size_t taken = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool second = mix_takes(mix, i);
      taken += second;
      std::memcpy(want.data() + 2 * i, (second ? b : a).data() + 2 * i, 2);
    }
    EXPECT_NEAR(static_cast<double>(taken) / n, 0.5, 0.01);
    CUstream stream = nullptr;
    ASSERT_EQ(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    ASSERT_EQ(api.mem_alloc(&p, bytes), CUDA_SUCCESS);
    DeviceBuffer buffer(&api, p);
    ASSERT_EQ(draw_on_device(api, draw, p, seed, bytes, stream), CUDA_SUCCESS);
    ASSERT_EQ(draw_on_device(api, draw, p, secret, bytes, stream, mix), CUDA_SUCCESS);
    ASSERT_EQ(api.stream_synchronize(stream), CUDA_SUCCESS);
    ASSERT_EQ(api.memcpy_dtoh(got.data(), p, bytes), CUDA_SUCCESS);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i)
      differ += std::memcmp(got.data() + 2 * i, want.data() + 2 * i, 2) != 0;
    EXPECT_EQ(differ, 0u);
    api.stream_destroy(stream);
  }
}

}  // namespace
}  // namespace kopt::cuda
