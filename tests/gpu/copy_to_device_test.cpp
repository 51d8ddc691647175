// A copy from the host has landed when copy_to_device returns (backend/cuda/prepared_launch.hpp):
// the timer's hash kernel, queued next on a non-blocking stream, sees every byte of it.
// cuMemcpyHtoD alone returns once pageable memory is staged, before its last DMA lands
// (the driver API's "synchronous behavior" notes), and kopt's streams are not ordered after it.
// What the plain call gives is printed, not asserted: on the H200 (2026-12-02) it missed 0 of
// 8 copies here, while one honest bench there failed its secret sample on the zeroed tail of a
// masked copy made that way; the race is the driver's to win or lose.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "backend/cuda/prepared_launch.hpp"
#include "backend/cuda/timer_helpers.hpp"
#include "gpu_context.hpp"
#include "gpu_skip.hpp"
#include "kopt/measure/keyed_hash.hpp"

namespace kopt::cuda {
namespace {

TEST(CopyToDevice, AKernelOnANonBlockingStreamSeesEveryByteOfACopyJustMade) {
  KOPT_SKIP_WITHOUT_GPU();
  PrimaryContext gpu;
  ASSERT_TRUE(gpu.ok()) << gpu.error();
  const DriverApi& api = gpu.api();
  {
    // The timer's own hash kernel reads the copy, as it reads a candidate's inputs.
    TimerHelpers helpers = build_timer_helpers(api, gpu.arch());
    DeviceHasher hasher(api, helpers, gpu.sm_count());
    ASSERT_TRUE(hasher.ok());
    const std::size_t words = std::size_t{64} << 20;  // 256 MiB
    const std::size_t bytes = words * 4;
    CUdeviceptr p = 0;
    ASSERT_EQ(api.mem_alloc(&p, bytes), CUDA_SUCCESS);
    DeviceBuffer buffer(&api, p);
    Stream stream(&api);
    std::vector<std::uint32_t> host(words);
    const auto* as_bytes = reinterpret_cast<const std::byte*>(host.data());
    // Round r's words copied in (landed, or by the plain call), hashed on `stream` at once:
    // whether the kernel saw all of them.
    auto saw_the_copy = [&](bool landed, std::uint32_t round) {
      for (std::size_t i = 0; i < words; ++i)
        host[i] = static_cast<std::uint32_t>(i) * 2654435761u + round;
      CUresult r = landed ? copy_to_device(api, buffer.get(), host.data(), bytes)
                          : api.memcpy_htod(buffer.get(), host.data(), bytes);
      EXPECT_EQ(r, CUDA_SUCCESS);
      std::uint64_t got = 0;
      auto failure = hasher.hash(buffer.get(), bytes, round, stream.get(), "x", got);
      EXPECT_FALSE(failure) << (failure ? failure->error : "");
      EXPECT_EQ(api.ctx_synchronize(), CUDA_SUCCESS);
      return got == keyed_hash({as_bytes, bytes}, round);
    };
    int plain_missed = 0;
    for (std::uint32_t round = 1; round <= 8; ++round) plain_missed += !saw_the_copy(false, round);
    for (std::uint32_t round = 9; round <= 24; ++round)
      EXPECT_TRUE(saw_the_copy(true, round)) << "round " << round;
    std::cout << "cuMemcpyHtoD alone: the next kernel on a non-blocking stream missed part of "
              << plain_missed << " of 8 copies of 256 MiB\n";
    RecordProperty("plain_copies_missed", std::to_string(plain_missed));
  }
}

}  // namespace
}  // namespace kopt::cuda
