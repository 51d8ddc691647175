#pragma once
// The parts of a CUDA timing (bench_timer.cpp): a pinned flag the blocking kernel waits on, a
// CUDA graph of a batch of launches, and a variant with its prepared launch, its verifier and the
// device calls the verifier drives (write, draw, read, hash), each landed before it returns.
#include <atomic>
#include <memory>

#include "device_draw.hpp"
#include "driver_api.hpp"
#include "kopt/backend/output_verifier.hpp"
#include "kopt/backend/sampling_rounds.hpp"
#include "prepared_launch.hpp"
#include "timer_helpers.hpp"

namespace kopt::cuda::bench_detail {

class PinnedFlag {
 public:
  explicit PinnedFlag(const DriverApi* api) : m_api(api) {
    void* p = nullptr;
    if (api->mem_host_alloc(&p, 2 * sizeof(int),
                            CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) {
      m_host = static_cast<volatile int*>(p);
      if (api->mem_host_get_device_pointer(&m_device, p, 0) != CUDA_SUCCESS) m_device = 0;
    }
  }
  PinnedFlag(const PinnedFlag&) = delete;
  ~PinnedFlag() {
    if (m_host) m_api->mem_free_host(const_cast<int*>(m_host));
  }
  bool ok() const { return m_host && m_device; }
  void reset() {
    m_host[0] = 0;
    m_host[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    m_host[0] = 1;
  }
  bool timed_out() const { return m_host[1] != 0; }
  CUdeviceptr device() const { return m_device; }

 private:
  const DriverApi* m_api;
  volatile int* m_host = nullptr;
  CUdeviceptr m_device = 0;
};

class Graph {
 public:
  explicit Graph(const DriverApi* api) : m_api(api) {}
  Graph(const Graph&) = delete;
  ~Graph() {
    if (m_exec) m_api->graph_exec_destroy(m_exec);
    if (m_graph) m_api->graph_destroy(m_graph);
  }
  CUresult capture(const PreparedLaunch& p, CUstream s, int batch) {
    CUresult r = m_api->stream_begin_capture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) return r;
    for (int i = 0; i < batch; ++i)
      if ((r = p.launch(s)) != CUDA_SUCCESS) break;
    CUresult end = m_api->stream_end_capture(s, &m_graph);
    if (r != CUDA_SUCCESS) return r;
    if (end != CUDA_SUCCESS) return end;
    return m_api->graph_instantiate(&m_exec, m_graph, 0);
  }
  CUgraphExec exec() const { return m_exec; }

 private:
  const DriverApi* m_api;
  CUgraph m_graph = nullptr;
  CUgraphExec m_exec = nullptr;
};

struct Variant : SampledVariant {
  PreparedLaunch launch;
  std::unique_ptr<Graph> graph;
  OutputVerifier verifier;
  Variant(PreparedLaunch l, const RunJob& job, const BenchOptions& opt, std::uint64_t seed,
          bool device_hash, bool device_compare, bool device_draw)
      : SampledVariant(opt.rule),
        launch(std::move(l)),
        verifier(job, opt, seed, device_hash, device_compare, device_draw) {}
  // Queued on `stream`, so it is done before the sample's start event.
  CUresult poison_outputs(CUstream stream) const {
    for (std::size_t i : verifier.outputs())
      if (CUresult r = launch.poison(stream, i, verifier.fill_for(i)); r != CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
  }
  // Writes a job tensor from the host, landed before it returns (outside the timed window).
  WriteTensor writer() const {
    return [this](std::size_t i, const std::vector<std::byte>& host) -> std::optional<RunResult> {
      CUresult r = copy_to_device(*launch.api, launch.buffers[i].get(), host.data(), host.size());
      if (r != CUDA_SUCCESS)
        return driver_failure(*launch.api, RunStatus::launch_failed,
                              ("cuMemcpyHtoD(" + launch.job->tensors[i].name + ")").c_str(), r);
      return std::nullopt;
    };
  }
  // Called after the sample's stop event completed: the outputs are final.
  ReadTensor reader() const {
    return [this](std::size_t i, std::vector<std::byte>& host) -> std::optional<RunResult> {
      CUresult r = launch.api->memcpy_dtoh(host.data(), launch.buffers[i].get(), host.size());
      if (r != CUDA_SUCCESS)
        return driver_failure(*launch.api, RunStatus::fault,
                              ("cuMemcpyDtoH(" + launch.job->tensors[i].name + ")").c_str(), r);
      return std::nullopt;
    };
  }
  // Draws a job tensor's recipe where it is (after what `stream` holds, landed before it
  // returns: outside the timed window); empty without the draw.
  DrawTensor drawer(const std::optional<InputDraw>& draw, CUstream stream) const {
    if (!draw) return {};
    return [this, &draw, stream](std::size_t i, const DrawRecipe& recipe,
                                 std::uint64_t mix) -> std::optional<RunResult> {
      const JobTensor& t = launch.job->tensors[i];
      CUresult r =
          draw_on_device(*launch.api, *draw, launch.buffers[i].get(), recipe, t.bytes, stream, mix);
      if (r == CUDA_SUCCESS) r = launch.api->stream_synchronize(stream);
      if (r != CUDA_SUCCESS)
        return driver_failure(*launch.api, RunStatus::launch_failed,
                              ("cuLaunchKernel(kopt_draw_tensor, " + t.name + ")").c_str(), r);
      return std::nullopt;
    };
  }
  // Hashes a job tensor where it is (after what `stream` holds); empty without a hasher.
  HashTensor hasher(const DeviceHasher& h, CUstream stream) const {
    if (!h.ok()) return {};
    return [this, &h, stream](std::size_t i, std::uint64_t key,
                              std::uint64_t& out) -> std::optional<RunResult> {
      return h.hash(launch.buffers[i].get(), launch.job->tensors[i].bytes, key, stream,
                    launch.job->tensors[i].name, out);
    };
  }
};

}  // namespace kopt::cuda::bench_detail
