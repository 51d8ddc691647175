#include "device_verify.hpp"

#include <algorithm>

#include "kopt/backend/output_compare_kernel.hpp"

namespace kopt::cuda {
namespace {

constexpr std::size_t k_keep_free_min = std::size_t{1} << 30;
constexpr unsigned k_threads = 256;

}  // namespace

DeviceComparison::DeviceComparison(const DriverApi& api, const TimerHelpers& helpers, int sm_count,
                                   ExpectedOnDevice& cache)
    : m_api(api),
      m_kernel(helpers.compare),
      m_mask(helpers.mask),
      m_sm_count(std::max(sm_count, 1)),
      m_cache(cache) {
  CUdeviceptr p = 0;
  if (m_kernel && m_mask &&
      api.mem_alloc(&p, k_compare_words * sizeof(std::uint64_t)) == CUDA_SUCCESS)
    m_words.emplace(&api, p);
}

unsigned DeviceComparison::blocks_for(unsigned long long n) const {
  return static_cast<unsigned>(std::clamp<unsigned long long>(
      (n + k_threads - 1) / k_threads, 1, static_cast<unsigned long long>(m_sm_count) * 8));
}

CUresult DeviceComparison::mask_copy(CUdeviceptr src, CUdeviceptr dst, std::size_t n, int width,
                                     std::uint64_t key, CUstream stream) {
  unsigned long long count = n, k = key;
  void* params[] = {&src, &dst, &count, &width, &k};
  if (n > 0)
    if (CUresult r = m_api.launch_kernel(m_mask, blocks_for(count), 1, 1, k_threads, 1, 1, 0,
                                         stream, params, nullptr);
        r != CUDA_SUCCESS)
      return r;
  return m_api.stream_synchronize(stream);
}

bool DeviceComparison::room_for(std::size_t bytes) const {
  std::size_t free = 0, total = 0;
  if (m_api.mem_get_info(&free, &total) != CUDA_SUCCESS) return false;
  return free >= bytes && free - bytes >= std::max(total / 10, k_keep_free_min);
}

std::optional<RunResult> DeviceComparison::compare(CUdeviceptr got, CUdeviceptr expected,
                                                   std::uint64_t mask, const JobTensor& t,
                                                   Tolerance tol, CUstream stream,
                                                   CompareResult& out) {
  auto failed = [&](const char* call, CUresult r) {
    return driver_failure(m_api, RunStatus::fault, (std::string(call) + "(" + t.name + ")").c_str(),
                          r);
  };
  const std::size_t size = dtype_size(t.dtype);
  unsigned long long n = t.bytes / size, poison = compare_poison_bits(t.dtype);
  int dtype = compare_dtype_code(t.dtype);
  double atol = tol.atol, rtol = tol.rtol;
  unsigned long long key = mask;
  CUdeviceptr words = m_words->get();
  CompareWords w = compare_words_start();
  if (CUresult r = copy_to_device(m_api, words, w.data(), sizeof w); r != CUDA_SUCCESS)
    return failed("cuMemcpyHtoD", r);
  if (n > 0) {
    void* params[] = {&got, &expected, &n, &dtype, &poison, &atol, &rtol, &key, &words};
    if (CUresult r = m_api.launch_kernel(m_kernel, blocks_for(n), 1, 1, k_threads, 1, 1, 0, stream,
                                         params, nullptr);
        r != CUDA_SUCCESS)
      return failed("cuLaunchKernel(kopt_compare_outputs)", r);
    if (CUresult r = m_api.stream_synchronize(stream); r != CUDA_SUCCESS)
      return failed("cuStreamSynchronize", r);
    if (CUresult r = m_api.memcpy_dtoh(w.data(), words, sizeof w); r != CUDA_SUCCESS)
      return failed("cuMemcpyDtoH", r);
  }
  std::optional<FirstMismatch> first;
  if (w[k_word_mismatches] > 0 && w[k_word_first] < n) {
    // The two elements of the first mismatch, for the message.
    std::vector<std::byte> g(size), e(size);
    const std::size_t at = static_cast<std::size_t>(w[k_word_first]) * size;
    if (CUresult r = m_api.memcpy_dtoh(g.data(), got + at, size); r != CUDA_SUCCESS)
      return failed("cuMemcpyDtoH", r);
    if (CUresult r = m_api.memcpy_dtoh(e.data(), expected + at, size); r != CUDA_SUCCESS)
      return failed("cuMemcpyDtoH", r);
    unmask_element(e, mask, static_cast<std::size_t>(w[k_word_first]));
    first =
        FirstMismatch{load_as_double(g.data(), 0, t.dtype), load_as_double(e.data(), 0, t.dtype)};
  }
  std::vector<std::int64_t> shape = t.shape;
  if (shape.empty()) shape = {static_cast<std::int64_t>(n)};
  out = compare_result_from_words(w, t.name, static_cast<std::size_t>(n), shape, tol, first);
  return std::nullopt;
}

const ExpectedOnDevice::Entry* DeviceComparison::expected_on_device(
    const ExpectedOutputs& expected, CUstream stream, std::optional<RunResult>& failure) {
  if (!expected.key.empty())
    for (const auto& e : m_cache.entries)
      if (e.key == expected.key) return &e;
  const HostTensor& host = *expected.host;
  const std::size_t bytes = std::max<std::size_t>(host.data.size(), 1);
  std::size_t free = 0, total = 0;
  if (m_api.mem_get_info(&free, &total) != CUDA_SUCCESS) return nullptr;
  // The oldest go first: for room on the device, and to keep the kept ones within a quarter.
  while (!m_cache.entries.empty() && (!room_for(bytes) || m_cache.bytes + bytes > total / 4)) {
    m_cache.bytes -= m_cache.entries.front().bytes;
    m_cache.entries.pop_front();
  }
  if (!room_for(bytes) || bytes > total / 4) return nullptr;
  CUdeviceptr p = 0;
  if (m_api.mem_alloc(&p, bytes) != CUDA_SUCCESS) return nullptr;  // no room after all: on the host
  DeviceBuffer buffer(&m_api, p);
  // Copied in and masked in place before any candidate's launch can run again.
  const int width = static_cast<int>(dtype_size(host.dtype));
  const std::uint64_t key = mask_key();
  if (CUresult r = copy_to_device(m_api, p, host.data.data(), host.data.size());
      r != CUDA_SUCCESS) {
    failure = driver_failure(m_api, RunStatus::fault,
                             ("cuMemcpyHtoD(the reference's " + host.name + ")").c_str(), r);
    return nullptr;
  }
  if (CUresult r = mask_copy(p, p, host.data.size() / width, width, key, stream);
      r != CUDA_SUCCESS) {
    failure = driver_failure(m_api, RunStatus::fault, "cuLaunchKernel(kopt_mask_copy)", r);
    return nullptr;
  }
  m_cache.bytes += host.data.size();
  m_cache.entries.push_back({expected.key, host.data.size(), std::move(buffer), key});
  return &m_cache.entries.back();
}

DeviceComparer DeviceComparison::comparer(const PreparedLaunch& launch, CUstream stream) {
  if (!ok()) return {};
  DeviceComparer d;
  d.keep = [this, &launch, stream](std::size_t i, bool& kept) -> std::optional<RunResult> {
    kept = false;
    const JobTensor& t = launch.job->tensors[i];
    const std::size_t bytes = std::max<std::size_t>(t.bytes, 1);
    if (!room_for(bytes)) return std::nullopt;
    CUdeviceptr p = 0;
    if (m_api.mem_alloc(&p, bytes) != CUDA_SUCCESS) return std::nullopt;  // read back instead
    Kept copy{DeviceBuffer(&m_api, p), mask_key()};
    const int width = static_cast<int>(dtype_size(t.dtype));
    if (CUresult r =
            mask_copy(launch.buffers[i].get(), p, t.bytes / width, width, copy.mask, stream);
        r != CUDA_SUCCESS)
      return driver_failure(m_api, RunStatus::fault,
                            ("cuLaunchKernel(kopt_mask_copy, golden " + t.name + ")").c_str(), r);
    auto& kept_of = m_kept[&launch];
    kept_of.erase(i);
    kept_of.emplace(i, std::move(copy));
    kept = true;
    return std::nullopt;
  };
  d.compare = [this, &launch, stream](
                  std::size_t i, const ExpectedOutputs* expected, Tolerance tol,
                  std::optional<CompareResult>& out) -> std::optional<RunResult> {
    out.reset();
    CUdeviceptr against = 0;
    std::uint64_t mask = 0;
    if (expected) {
      std::optional<RunResult> failure;
      const ExpectedOnDevice::Entry* e = expected_on_device(*expected, stream, failure);
      if (failure) return failure;
      if (e) {
        against = e->buffer.get();
        mask = e->mask;
      }
    } else if (auto v = m_kept.find(&launch); v != m_kept.end()) {
      if (auto c = v->second.find(i); c != v->second.end()) {
        against = c->second.buffer.get();
        mask = c->second.mask;
      }
    }
    if (!against) return std::nullopt;  // no room: the verifier compares on the host
    CompareResult c;
    if (auto failure =
            compare(launch.buffers[i].get(), against, mask, launch.job->tensors[i], tol, stream, c))
      return failure;
    out = std::move(c);
    return std::nullopt;
  };
  return d;
}

}  // namespace kopt::cuda
