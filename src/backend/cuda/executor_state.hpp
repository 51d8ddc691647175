#pragma once
// What a CudaExecutor holds; shared by its run, bench and ceilings parts.
#include <memory>
#include <optional>

#include "driver_api.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "prepared_launch.hpp"

namespace kopt::cuda {

struct ExpectedOnDevice;  // device_verify.hpp
struct TimerHelpers;      // timer_helpers.hpp

struct CudaExecutor::State {
  std::optional<DeviceInfo> info;  // filled on first use
  const DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  int ordinal = 0;
  // The reference's outputs copied to the device for the timer's comparisons (device_verify.hpp).
  std::shared_ptr<ExpectedOnDevice> expected;
  // The timer's own kernels, built with NVRTC once an executor (a compile of about 0.2 s that
  // every bench job paid, a tune's batches each).
  std::shared_ptr<const TimerHelpers> helpers;
};

// Bits of NVML's clock-event reasons that mean the clocks were held down (power, thermal,
// hardware slowdown); idle and application-clock settings are not throttling.
inline constexpr unsigned long long k_throttle_bits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// The current clock-event reasons (0 when NVML is unavailable); cheap enough per sample.
unsigned long long read_throttle_mask(const std::string& pci_bus_id);

}  // namespace kopt::cuda
