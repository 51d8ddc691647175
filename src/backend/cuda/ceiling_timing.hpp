#pragma once
// Timing for the ceilings (ceilings.cpp, copy_ceilings.cpp, fp8_ceiling.cpp): device events
// around each run.
#include <vector>

#include "executor_state.hpp"

namespace kopt::cuda {

// Times `work` (which enqueues on `stream`) `samples` times after `warmup` runs; `before`
// runs ahead of each, outside the timed window (an L2 flush, say). Returns per-run seconds.
template <class Before, class Work>
Expected<std::vector<double>> time_runs_after(const DriverApi& api, CUstream stream, Before before,
                                              Work work, int warmup, int samples) {
  Event start(&api), stop(&api);
  std::vector<double> out;
  for (int i = 0; i < warmup + samples; ++i) {
    if (CUresult r = before(); r != CUDA_SUCCESS)
      return Unexpected(environment_error(api.describe(r)));
    api.event_record(start.get(), stream);
    if (CUresult r = work(); r != CUDA_SUCCESS)
      return Unexpected(environment_error(api.describe(r)));
    api.event_record(stop.get(), stream);
    if (CUresult r = api.event_synchronize(stop.get()); r != CUDA_SUCCESS)
      return Unexpected(environment_error(api.describe(r)));
    float ms = 0;
    api.event_elapsed_time(&ms, start.get(), stop.get());
    if (i >= warmup) out.push_back(ms / 1000.0);
  }
  return out;
}

template <class Work>
Expected<std::vector<double>> time_runs(const DriverApi& api, CUstream stream, Work work,
                                        int warmup, int samples) {
  return time_runs_after(
      api, stream, [] { return CUDA_SUCCESS; }, work, warmup, samples);
}

// dram_copy (the better of dram_memcpy, dram_copy_kernel and dram_copy_cold) and the three
// figures it was chosen from.
std::vector<Ceiling> copy_ceilings(const DriverApi& api, CUstream stream, const DeviceInfo& dev);

// tensor_fp8: cublasLtMatmul 8192^3, e4m3 in, bf16 out (compute capability 8.9 and later);
// a missing cuBLASLt or a failing call is the ceiling's error, never a crash.
Ceiling fp8_ceiling(const DriverApi& api, CUstream stream);

}  // namespace kopt::cuda
