// How many candidates a tune batch holds (tuner.hpp: batch_for_memory): a quarter of each
// device's memory and of each host's available memory, the batch split over the devices.
#include <gtest/gtest.h>

#include "kopt/core/host_memory.hpp"
#include "kopt/tune/tuner.hpp"

namespace kopt::tune {
namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;
constexpr std::uintmax_t MiB = std::uintmax_t{1} << 20;

DeviceInfo gpu(std::int64_t memory, std::int64_t host_available, std::string machine = "") {
  DeviceInfo d;
  d.memory_bytes = memory;
  d.host_memory_available_bytes = host_available;
  d.machine = std::move(machine);
  return d;
}

DeviceInfo opencl_cpu(std::int64_t memory, std::int64_t host_available) {
  DeviceInfo d = gpu(memory, host_available);
  d.backend = "opencl";
  d.device_type = "cpu";
  return d;
}

TEST(BatchForMemory, AQuarterOfTheDeviceForTheCandidatesTensors) {
  // 80 GiB: 20 GiB for 1 GiB candidates; the host (plenty) holds their 256 MiB outputs.
  CandidateFootprint per{1024 * MiB, 256 * MiB};
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 1000 * GiB)}), 20u);
  EXPECT_EQ(batch_for_memory(8, per, {gpu(80 * GiB, 1000 * GiB)}), 8u);
  EXPECT_EQ(batch_for_memory(64, {64 * GiB, 0}, {gpu(80 * GiB, 1000 * GiB)}), 1u);  // at least one
  EXPECT_EQ(batch_for_memory(0, per, {gpu(80 * GiB, 1000 * GiB)}), 1u);
}

TEST(BatchForMemory, TheGoldenOutputsMustFitInTheHostsAvailableMemory) {
  // The device would take 20; 16 GiB available on the host: 4 GiB for 1 GiB of outputs each.
  CandidateFootprint per{1024 * MiB, 1024 * MiB};
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 16 * GiB)}), 4u);
  // Unknown host memory (an older worker): the device's rule alone.
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 0)}), 20u);
}

TEST(BatchForMemory, SeveralDevicesEachHoldTheirShareButShareTheirHost) {
  CandidateFootprint per{1024 * MiB, 512 * MiB};
  // Two GPUs: 20 each, 40 in all; one host with 32 GiB available: 8 GiB / 512 MiB = 16.
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 32 * GiB), gpu(80 * GiB, 32 * GiB)}), 16u);
  // The same GPUs on two machines (a Ray cluster): each holds half the batch: 32.
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 32 * GiB, "a"), gpu(80 * GiB, 32 * GiB, "b")}),
            32u);
  // Two Ray nodes of one machine share it.
  EXPECT_EQ(batch_for_memory(64, per, {gpu(80 * GiB, 32 * GiB, "a"), gpu(80 * GiB, 32 * GiB, "a")}),
            16u);
}

TEST(BatchForMemory, AnOpenclCpuDevicesBuffersAreHostMemory) {
  // PoCL reports the host's memory as its own: two such devices are not twice the memory.
  // 192 MiB of tensors and 64 MiB of outputs a candidate, 20 GiB available: 5 GiB / 256 MiB.
  CandidateFootprint per{192 * MiB, 64 * MiB};
  EXPECT_EQ(batch_for_memory(64, per, {opencl_cpu(22 * GiB, 20 * GiB)}), 20u);
  EXPECT_EQ(
      batch_for_memory(64, per, {opencl_cpu(22 * GiB, 20 * GiB), opencl_cpu(22 * GiB, 20 * GiB)}),
      20u);
}

TEST(HostMemory, MemAvailableIsReadFromMeminfo) {
  EXPECT_EQ(mem_available_from_meminfo("MemTotal:       24684084 kB\nMemFree:         1000 kB\n"
                                       "MemAvailable:   20000000 kB\nBuffers: 12 kB\n"),
            std::int64_t{20000000} * 1024);
  EXPECT_EQ(mem_available_from_meminfo("MemTotal: 1 kB\n"), 0);
  EXPECT_GT(host_memory_available_bytes(), 0);  // this host's, from /proc/meminfo
}

}  // namespace
}  // namespace kopt::tune
