#pragma once
// A RunJob made ready to enqueue on an OpenCL device: its program built (once per module),
// buffers filled (outputs poisoned), arguments set, and the NDRange (global = grid x block,
// local = block, as CUDA's grid and block; shared_mem becomes a trailing __local argument).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "handles.hpp"
#include "host_cache.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt::opencl {

struct DeviceVerifyCache;  // device_verify.hpp

struct OpenclExecutor::Programs {
  std::map<std::string, Program> by_module;
  std::shared_ptr<DeviceVerifyCache> verify;  // the timer's own kernels, made on first use
};

struct PreparedKernel {
  // Where the session computes in place (Session::tensors_in_place): each buffer's memory,
  // one per job tensor, in order (released after the buffers); else empty.
  std::vector<HostBlock> storage;
  Kernel kernel;
  std::vector<Buffer> buffers;  // one per job tensor, in order
  cl_uint dims = 1;
  std::size_t global[3] = {1, 1, 1};
  std::size_t local[3] = {1, 1, 1};
  // Enqueues one launch; `event` (optional) receives its event.
  cl_int enqueue(const Session& s, cl_event* event) const;
  // Enqueues the fill of buffer `index` (an output of `tensor`) with `fill`.
  cl_int poison(const Session& s, std::size_t index, const JobTensor& tensor, Poison fill) const;
  // Writes back and evicts every line of the tensors from the host's caches (storage only):
  // the next launch reads them from DRAM. The queue must be idle.
  void evict_tensors() const {
    for (const HostBlock& b : storage) b.evict();
  }
  std::size_t storage_bytes() const {
    std::size_t n = 0;
    for (const HostBlock& b : storage) n += b.size();
    return n;
  }
  // Copies buffer `index` into `host` (blocking); a failure as a RunResult.
  std::optional<RunResult> read(const Session& s, std::size_t index, const JobTensor& tensor,
                                std::vector<std::byte>& host) const;
};

// A failure of `call` as a RunResult: enqueue errors are launch failures; errors while
// waiting are faults, after which the worker starts afresh (fatal).
RunResult cl_failure(RunStatus status, const std::string& call, cl_int code);

std::optional<PreparedKernel> prepare_kernel(const Session& s, OpenclExecutor::Programs& programs,
                                             const RunJob& job, RunResult& failure);

// Seconds between an event's start and end, from the queue's profiling counters.
std::optional<double> event_seconds(const OpenclApi& api, cl_event e);

}  // namespace kopt::opencl
