#pragma once
// The timer's own kernels (bench_timer.cpp), built with NVRTC for the device in the worker:
// the blocking kernel that holds a stream until a sample is queued, the L2 flush, the keyed
// hash that compares a timed launch's outputs with the golden launch's where they are, and the
// comparison of outputs with a reference's where they are (device_verify.hpp); their source is
// kopt/backend/cuda/timer_kernels.hpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kopt/backend/bench_job.hpp"
#include "prepared_launch.hpp"

namespace kopt::cuda {

struct TimerHelpers {
  std::unique_ptr<Module> module;
  CUfunction blocking = nullptr;
  CUfunction flush = nullptr;
  CUfunction hash = nullptr;
  CUfunction compare = nullptr;
  CUfunction mask = nullptr;
  CUfunction l2 = nullptr;
  CUfunction draw = nullptr;
};

TimerHelpers build_timer_helpers(const DriverApi& api, const std::string& arch);
// The helpers `kept` holds, built into it on first use (an executor's, for all its jobs).
const TimerHelpers& timer_helpers(std::shared_ptr<const TimerHelpers>& kept, const DriverApi& api,
                                  const std::string& arch);

// The keyed hash (measure/keyed_hash.hpp) of a device buffer, computed by the helpers' kernel:
// 8 bytes cross, and the tail of a size that is no multiple of 4 (at most 3 bytes).
class DeviceHasher {
 public:
  // Unusable (ok() false) where the helpers have no hash kernel or its result cannot be
  // allocated: the verifier then reads every compared sample back.
  DeviceHasher(const DriverApi& api, const TimerHelpers& helpers, int sm_count);
  bool ok() const { return m_out.has_value(); }
  // Queued on `stream` after what is there (the sample's launch), then waited for.
  std::optional<RunResult> hash(CUdeviceptr ptr, std::size_t bytes, std::uint64_t key,
                                CUstream stream, const std::string& tensor,
                                std::uint64_t& out) const;

 private:
  const DriverApi& m_api;
  CUfunction m_kernel = nullptr;
  int m_sm_count = 1;
  std::optional<DeviceBuffer> m_out;
};

}  // namespace kopt::cuda
