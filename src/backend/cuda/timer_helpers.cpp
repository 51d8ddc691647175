#include "timer_helpers.hpp"

#include <algorithm>
#include <vector>

#include "kopt/measure/keyed_hash.hpp"

namespace kopt::cuda {
namespace {

// kopt_blocking_kernel spins until the host sets flag[0], or gives up after timeout_ns and
// marks flag[1]. kopt_l2_flush streams a buffer through the L2 with L2-only loads (.cg),
// evicting what was there and leaving clean lines; `sink` keeps the loads alive.
// kopt_keyed_hash adds every 32-bit word's contribution (measure/keyed_hash.hpp: the same
// constants) into *out; words [0, 4 * vectors) are read 16 bytes at a time where the buffer
// is aligned for it.
constexpr const char* k_helper_source = R"(
extern "C" __global__ void kopt_blocking_kernel(volatile int* flag, unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) { flag[1] = 1; return; }
  }
}
extern "C" __global__ void kopt_l2_flush(const int4* buf, unsigned long long n, int* sink) {
  int acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7f4a7c15) *sink = acc;
}
__device__ __forceinline__ unsigned long long kopt_hash_word(unsigned w, unsigned long long i,
                                                             unsigned long long key) {
  unsigned long long x = (unsigned long long)w ^ (key + i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
extern "C" __global__ void kopt_keyed_hash(const unsigned* words, unsigned long long n,
                                           unsigned long long vectors, unsigned long long key,
                                           unsigned long long* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long acc = 0;
  const uint4* v = (const uint4*)words;
  for (unsigned long long j = tid; j < vectors; j += stride) {
    uint4 q = __ldcs(v + j);
    unsigned long long i = 4 * j;
    acc += kopt_hash_word(q.x, i, key) + kopt_hash_word(q.y, i + 1, key) +
           kopt_hash_word(q.z, i + 2, key) + kopt_hash_word(q.w, i + 3, key);
  }
  for (unsigned long long i = 4 * vectors + tid; i < n; i += stride)
    acc += kopt_hash_word(words[i], i, key);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicAdd(out, acc);
}
)";

}  // namespace

TimerHelpers build_timer_helpers(const DriverApi& api, const std::string& arch) {
  TimerHelpers h;
  h.module =
      load_builtin_module(api, arch, "kopt_timer_helpers", k_helper_source, "kopt_blocking_kernel");
  if (!h.module) return h;
  auto get = [&](CUfunction& f, const char* name) {
    if (api.module_get_function(&f, h.module->get(), name) != CUDA_SUCCESS) f = nullptr;
  };
  get(h.blocking, "kopt_blocking_kernel");
  get(h.flush, "kopt_l2_flush");
  get(h.hash, "kopt_keyed_hash");
  return h;
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
