#pragma once
// A run job's comparison where the kernel's tensors are (RunJob::compare, kopt check's kernels
// of kopt's own on CUDA: a cubin or a solve() library): each input's keyed hash before the
// launch and after it, each output named in job.compare judged against the reference's file
// by the timer's kernels (device_verify.hpp, the reference kept masked on the device for the
// executor's later jobs), its relative L2 distance and its distance to the fp64 reference
// measured there. Only summaries cross; what the device could not settle (no room, a file not
// whole, a hash that changed) is read back by collect_tensors as before. Where the reference's
// outputs are kept in kopt's trusted Python process instead, that process compares
// (compare_where_kept).
#include <map>
#include <optional>

#include "device_verify.hpp"
#include "kopt/backend/executor.hpp"
#include "prepared_launch.hpp"
#include "timer_helpers.hpp"

namespace kopt::cuda {

class RunComparison {
 public:
  // Does nothing where the job asks for no comparison and no hash of its inputs
  // (RunJob::hash_inputs), or the helpers lack a kernel.
  RunComparison(const DriverApi& api, const TimerHelpers& helpers, int sm_count,
                ExpectedOnDevice& cache, const PreparedLaunch& launch);
  // Whether it compares anything: the job asks, and the helpers and its buffers are there.
  bool active() const { return m_active; }
  // Before the launch: the inputs' hashes, under a key drawn now.
  std::optional<RunResult> note_inputs();
  // After the launch has completed: an input whose hash is unchanged gets the checksum it was
  // written with, each output of job.compare its summary (result.compared).
  std::optional<RunResult> settle(RunResult& result);

 private:
  const PreparedLaunch& m_launch;
  DeviceHasher m_hasher;
  DeviceComparison m_comparison;
  bool m_active = false;
  std::uint64_t m_key = 0;
  std::map<std::size_t, std::uint64_t> m_before;  // by job tensor index
};

// The outputs of the job's compare whose reference kopt's trusted Python process keeps
// (OutputSource::key), compared there by `comparer`: each output's memory shared by a CUDA IPC
// handle, so that neither its bytes nor the reference's leave the device; or, `through_files`,
// each not yet compared by the file collect_tensors wrote for it (the driver would not share it,
// or that process could not open it). The failure, or nullopt (result.compared then holds each
// one compared).
std::optional<RunResult> compare_where_kept(const DriverApi& api, const PreparedLaunch& launch,
                                            const KeptComparer& comparer, bool through_files,
                                            RunResult& result);

}  // namespace kopt::cuda
