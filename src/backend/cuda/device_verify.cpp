#include "device_verify.hpp"

#include <algorithm>
#include <cmath>

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
      m_l2(helpers.l2),
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

std::optional<RunResult> DeviceComparison::summed(CUfunction kernel, const char* name,
                                                  void** params, unsigned long long n, void* words,
                                                  std::size_t bytes, CUstream stream,
                                                  const std::string& tensor) {
  auto failed = [&](const std::string& call, CUresult r) {
    return driver_failure(m_api, RunStatus::fault, (call + "(" + tensor + ")").c_str(), r);
  };
  if (CUresult r = copy_to_device(m_api, m_words->get(), words, bytes); r != CUDA_SUCCESS)
    return failed("cuMemcpyHtoD", r);
  if (n == 0) return std::nullopt;
  if (CUresult r = m_api.launch_kernel(kernel, blocks_for(n), 1, 1, k_threads, 1, 1, 0, stream,
                                       params, nullptr);
      r != CUDA_SUCCESS)
    return failed(std::string("cuLaunchKernel(") + name + ")", r);
  if (CUresult r = m_api.stream_synchronize(stream); r != CUDA_SUCCESS)
    return failed("cuStreamSynchronize", r);
  if (CUresult r = m_api.memcpy_dtoh(words, m_words->get(), bytes); r != CUDA_SUCCESS)
    return failed("cuMemcpyDtoH", r);
  return std::nullopt;
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
  void* params[] = {&got, &expected, &n, &dtype, &poison, &atol, &rtol, &key, &words};
  if (auto f =
          summed(m_kernel, "kopt_compare_outputs", params, n, w.data(), sizeof w, stream, t.name))
    return f;
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
  d.preload = [this, stream](const ExpectedOutputs& expected) -> std::optional<RunResult> {
    std::optional<RunResult> failure;
    expected_on_device(expected, stream, failure);
    return failure;
  };
  d.holds = [this](const std::string& key) { return holds(key); };
  return d;
}

bool DeviceComparison::holds(const std::string& key) const {
  return !key.empty() &&
         std::any_of(m_cache.entries.begin(), m_cache.entries.end(),
                     [&](const ExpectedOnDevice::Entry& e) { return e.key == key; });
}

std::optional<RunResult> DeviceComparison::relative_l2(CUdeviceptr got, DType got_type,
                                                       CUdeviceptr ref, DType ref_type,
                                                       std::uint64_t key, std::size_t n,
                                                       CUstream stream, const std::string& tensor,
                                                       double& out) {
  double sums[3] = {0, 0, 0};
  CUdeviceptr words = m_words->get();  // k_compare_words 64-bit words: room for the three
  int gd = compare_dtype_code(got_type), rd = compare_dtype_code(ref_type);
  unsigned long long count = n, k = key;
  void* params[] = {&got, &gd, &ref, &rd, &count, &k, &words};
  if (auto f = summed(m_l2, "kopt_l2_sums", params, count, sums, sizeof sums, stream, tensor))
    return f;
  out = sums[2] == 0 ? -1 : sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : std::sqrt(sums[0]);
  return std::nullopt;
}

std::optional<RunResult> DeviceComparison::judge(const PreparedLaunch& launch, std::size_t index,
                                                 const ExpectedOutputs& expected,
                                                 const HostTensor* exact, Tolerance tol,
                                                 CUstream stream,
                                                 std::optional<kopt::DeviceComparison>& out) {
  out.reset();
  if (!ok() || !m_l2) return std::nullopt;
  const JobTensor& t = launch.job->tensors[index];
  const std::size_t n = t.bytes / dtype_size(t.dtype);
  // The fp64 reference first: without room for it, nothing of this output is judged here.
  std::optional<DeviceBuffer> exact_copy;
  if (exact) {
    if (exact->data.size() != n * dtype_size(exact->dtype) || !room_for(exact->data.size()))
      return std::nullopt;
    CUdeviceptr p = 0;
    if (m_api.mem_alloc(&p, std::max<std::size_t>(exact->data.size(), 1)) != CUDA_SUCCESS)
      return std::nullopt;
    exact_copy.emplace(&m_api, p);
    if (CUresult r = copy_to_device(m_api, p, exact->data.data(), exact->data.size());
        r != CUDA_SUCCESS)
      return driver_failure(m_api, RunStatus::fault,
                            ("cuMemcpyHtoD(the fp64 reference's " + t.name + ")").c_str(), r);
  }
  std::optional<RunResult> failure;
  const ExpectedOnDevice::Entry* e = expected_on_device(expected, stream, failure);
  if (failure) return failure;
  if (!e) return std::nullopt;
  const CUdeviceptr got = launch.buffers[index].get();
  CompareResult c;
  if (auto f = compare(got, e->buffer.get(), e->mask, t, tol, stream, c)) return f;
  kopt::DeviceComparison d;
  d.numel = c.numel;
  d.mismatches = c.mismatches;
  d.nan = c.nan_count;
  d.inf = c.inf_count;
  d.unwritten = c.unwritten;
  d.max_abs_err = c.max_abs_err;
  d.max_rel_err = c.max_rel_err;
  for (const auto& m : c.first_mismatches) d.first.push_back({m.flat, m.got, m.expected});
  double rel = -1;
  if (auto f = relative_l2(got, t.dtype, e->buffer.get(), t.dtype, e->mask, n, stream, t.name, rel))
    return f;
  d.rel_l2_err = std::max(rel, 0.0);  // compare_tensors': 0 where no element is finite
  if (exact_copy)
    if (auto f = relative_l2(got, t.dtype, exact_copy->get(), exact->dtype, 0, n, stream, t.name,
                             d.exact_rel_l2))
      return f;
  out = std::move(d);
  return std::nullopt;
}

}  // namespace kopt::cuda
