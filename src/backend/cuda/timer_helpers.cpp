#include "timer_helpers.hpp"

#include <algorithm>
#include <vector>

#include "kopt/backend/cuda/timer_kernels.hpp"
#include "kopt/measure/keyed_hash.hpp"

namespace kopt::cuda {

TimerHelpers build_timer_helpers(const DriverApi& api, const std::string& arch) {
  TimerHelpers h;
  static const std::string source = timer_kernels_source();
  h.module =
      load_builtin_module(api, arch, "kopt_timer_helpers", source.c_str(), "kopt_blocking_kernel");
  if (!h.module) return h;
  auto get = [&](CUfunction& f, const char* name) {
    if (api.module_get_function(&f, h.module->get(), name) != CUDA_SUCCESS) f = nullptr;
  };
  get(h.blocking, "kopt_blocking_kernel");
  get(h.flush, "kopt_l2_flush");
  get(h.hash, "kopt_keyed_hash");
  get(h.compare, "kopt_compare_outputs");
  get(h.mask, "kopt_mask_copy");
  get(h.l2, "kopt_l2_sums");
  get(h.draw, "kopt_draw_tensor");
  return h;
}

const TimerHelpers& timer_helpers(std::shared_ptr<const TimerHelpers>& kept, const DriverApi& api,
                                  const std::string& arch) {
  if (!kept) kept = std::make_shared<const TimerHelpers>(build_timer_helpers(api, arch));
  return *kept;
}

DeviceHasher::DeviceHasher(const DriverApi& api, const TimerHelpers& helpers, int sm_count)
    : m_api(api), m_kernel(helpers.hash), m_sm_count(std::max(sm_count, 1)) {
  CUdeviceptr p = 0;
  if (m_kernel && api.mem_alloc(&p, sizeof(std::uint64_t)) == CUDA_SUCCESS) m_out.emplace(&api, p);
}

std::optional<RunResult> DeviceHasher::hash(CUdeviceptr ptr, std::size_t bytes, std::uint64_t key,
                                            CUstream stream, const std::string& tensor,
                                            std::uint64_t& out) const {
  auto failed = [&](const char* call, CUresult r) {
    return driver_failure(m_api, RunStatus::fault, (std::string(call) + "(" + tensor + ")").c_str(),
                          r);
  };
  CUdeviceptr result = m_out->get();
  unsigned long long words = bytes / 4;
  unsigned long long vectors = ptr % 16 == 0 ? words / 4 : 0;
  unsigned long long hkey = key;
  void* params[] = {&ptr, &words, &vectors, &hkey, &result};
  constexpr unsigned k_threads = 256;
  const unsigned long long wanted =
      (std::max(vectors, words - 4 * vectors) + k_threads - 1) / k_threads;
  const unsigned blocks = static_cast<unsigned>(
      std::clamp<unsigned long long>(wanted, 1, static_cast<unsigned long long>(m_sm_count) * 8));
  if (CUresult r = m_api.memset_d32_async(result, 0, 2, stream); r != CUDA_SUCCESS)
    return failed("cuMemsetD32Async", r);
  if (CUresult r =
          m_api.launch_kernel(m_kernel, blocks, 1, 1, k_threads, 1, 1, 0, stream, params, nullptr);
      r != CUDA_SUCCESS)
    return failed("cuLaunchKernel(kopt_keyed_hash)", r);
  if (CUresult r = m_api.stream_synchronize(stream); r != CUDA_SUCCESS)
    return failed("cuStreamSynchronize", r);
  std::uint64_t sum = 0;
  if (CUresult r = m_api.memcpy_dtoh(&sum, result, sizeof sum); r != CUDA_SUCCESS)
    return failed("cuMemcpyDtoH", r);
  if (std::size_t tail = bytes % 4; tail > 0) {
    std::vector<std::byte> last(tail);
    if (CUresult r = m_api.memcpy_dtoh(last.data(), ptr + 4 * words, tail); r != CUDA_SUCCESS)
      return failed("cuMemcpyDtoH", r);
    sum += keyed_hash(last, key, words);
  }
  out = sum;
  return std::nullopt;
}

}  // namespace kopt::cuda
