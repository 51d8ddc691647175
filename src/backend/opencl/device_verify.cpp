#include "device_verify.hpp"

#include <algorithm>

#include "kopt/backend/output_compare_kernel.hpp"
#include "kopt/measure/keyed_hash.hpp"

namespace kopt::opencl {
namespace {

// measure/keyed_hash.hpp's definition, a 32-bit word a step, each work-item's sum added once.
constexpr const char* k_hash_source = R"(
static inline ulong kopt_hash_word(uint w, ulong i, ulong key) {
  ulong x = (ulong)w ^ (key + i * (ulong)0x9E3779B97F4A7C15UL);
  x ^= x >> 30;
  x *= (ulong)0xBF58476D1CE4E5B9UL;
  x ^= x >> 27;
  x *= (ulong)0x94D049BB133111EBUL;
  return x ^ (x >> 31);
}
__kernel void kopt_keyed_hash(__global const uint* words, ulong n, ulong key,
                              __global ulong* out) {
  ulong acc = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    acc += kopt_hash_word(words[i], i, key);
  if (acc != 0) atom_add((volatile __global ulong*)out, acc);
}
)";

RunResult fault(const std::string& call, cl_int err) {
  return cl_failure(RunStatus::fault, call, err);
}

}  // namespace

DeviceVerify::DeviceVerify(const Session& s, DeviceVerifyCache& cache, bool wanted)
    : m_s(s), m_cache(cache) {
  const OpenclApi& api = *s.api;
  if (!wanted) return;
  if (!cache.tried) {
    cache.tried = true;
    BuiltProgram b =
        build_program(s, output_compare_source(KernelDialect::opencl) + k_hash_source, "");
    if (b.status == CL_SUCCESS)
      cache.program = std::move(b.program);
    else
      cache.why = "the verification kernels do not build: " + cl_error_name(b.status) + " " + b.log;
  }
  if (!cache.program) return;
  cl_int err = CL_SUCCESS;
  Kernel hash(&api, api.create_kernel(cache.program.get(), "kopt_keyed_hash", &err));
  Kernel compare(&api, api.create_kernel(cache.program.get(), "kopt_compare_outputs", &err));
  Kernel mask(&api, api.create_kernel(cache.program.get(), "kopt_mask_copy", &err));
  Buffer words(&api, api.create_buffer(s.context.get(), CL_MEM_READ_WRITE,
                                       k_compare_words * sizeof(std::uint64_t), nullptr, &err));
  if (!hash || !compare || !mask || !words) return;
  m_hash = std::move(hash);
  m_compare = std::move(compare);
  m_mask = std::move(mask);
  m_words = std::move(words);
  m_items = static_cast<std::size_t>(std::max(s.info.sm_count, 1)) * 1024;
  m_budget = static_cast<std::size_t>(std::max<std::int64_t>(s.info.memory_bytes, 0)) / 4;
}

bool DeviceVerify::room_for(std::size_t bytes) const {
  return m_kept_bytes + m_cache.expected_bytes + bytes <= m_budget;
}

std::optional<RunResult> DeviceVerify::hash(cl_mem buffer, std::size_t bytes, std::uint64_t key,
                                            const std::string& tensor, std::uint64_t& out) {
  const OpenclApi& api = *m_s.api;
  const cl_ulong zero = 0, words = bytes / 4, k = key;
  cl_mem result = m_words.get();
  if (cl_int err = api.enqueue_write_buffer(m_s.queue.get(), result, CL_TRUE, 0, sizeof zero, &zero,
                                            0, nullptr, nullptr);
      err != CL_SUCCESS)
    return fault("clEnqueueWriteBuffer(hash of " + tensor + ")", err);
  std::uint64_t sum = 0;
  if (words > 0) {
    api.set_kernel_arg(m_hash.get(), 0, sizeof(cl_mem), &buffer);
    api.set_kernel_arg(m_hash.get(), 1, sizeof words, &words);
    api.set_kernel_arg(m_hash.get(), 2, sizeof k, &k);
    api.set_kernel_arg(m_hash.get(), 3, sizeof(cl_mem), &result);
    const std::size_t global = std::min<std::size_t>(m_items, words);
    if (cl_int err = api.enqueue_nd_range_kernel(m_s.queue.get(), m_hash.get(), 1, nullptr, &global,
                                                 nullptr, 0, nullptr, nullptr);
        err != CL_SUCCESS)
      return cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel(kopt_keyed_hash)", err);
    if (cl_int err = api.enqueue_read_buffer(m_s.queue.get(), result, CL_TRUE, 0, sizeof sum, &sum,
                                             0, nullptr, nullptr);
        err != CL_SUCCESS)
      return fault("clEnqueueReadBuffer(hash of " + tensor + ")", err);
  }
  if (std::size_t tail = bytes % 4; tail > 0) {
    std::vector<std::byte> last(tail);
    if (cl_int err = api.enqueue_read_buffer(m_s.queue.get(), buffer, CL_TRUE, 4 * words, tail,
                                             last.data(), 0, nullptr, nullptr);
        err != CL_SUCCESS)
      return fault("clEnqueueReadBuffer(" + tensor + ")", err);
    sum += keyed_hash(last, key, words);
  }
  out = sum;
  return std::nullopt;
}

cl_int DeviceVerify::mask_copy(cl_mem src, cl_mem dst, std::size_t n, int width,
                               std::uint64_t key) {
  const OpenclApi& api = *m_s.api;
  const cl_ulong count = n, k = key;
  const cl_int w = width;
  api.set_kernel_arg(m_mask.get(), 0, sizeof(cl_mem), &src);
  api.set_kernel_arg(m_mask.get(), 1, sizeof(cl_mem), &dst);
  api.set_kernel_arg(m_mask.get(), 2, sizeof count, &count);
  api.set_kernel_arg(m_mask.get(), 3, sizeof w, &w);
  api.set_kernel_arg(m_mask.get(), 4, sizeof k, &k);
  if (n > 0) {
    const std::size_t global = std::min<std::size_t>(m_items, n);
    if (cl_int err = api.enqueue_nd_range_kernel(m_s.queue.get(), m_mask.get(), 1, nullptr, &global,
                                                 nullptr, 0, nullptr, nullptr);
        err != CL_SUCCESS)
      return err;
  }
  return api.finish(m_s.queue.get());
}

std::optional<RunResult> DeviceVerify::compare(cl_mem got, cl_mem expected, std::uint64_t mask,
                                               const JobTensor& t, Tolerance tol,
                                               CompareResult& out) {
  const OpenclApi& api = *m_s.api;
  const std::size_t size = dtype_size(t.dtype);
  const cl_ulong n = t.bytes / size, poison = compare_poison_bits(t.dtype);
  const cl_int dtype = compare_dtype_code(t.dtype);
  const double atol = tol.atol, rtol = tol.rtol;
  const cl_ulong key = mask;
  CompareWords w = compare_words_start();
  cl_mem words = m_words.get();
  if (cl_int err = api.enqueue_write_buffer(m_s.queue.get(), words, CL_TRUE, 0, sizeof w, w.data(),
                                            0, nullptr, nullptr);
      err != CL_SUCCESS)
    return fault("clEnqueueWriteBuffer(comparison of " + t.name + ")", err);
  if (n > 0) {
    Kernel& k = m_compare;
    api.set_kernel_arg(k.get(), 0, sizeof(cl_mem), &got);
    api.set_kernel_arg(k.get(), 1, sizeof(cl_mem), &expected);
    api.set_kernel_arg(k.get(), 2, sizeof n, &n);
    api.set_kernel_arg(k.get(), 3, sizeof dtype, &dtype);
    api.set_kernel_arg(k.get(), 4, sizeof poison, &poison);
    api.set_kernel_arg(k.get(), 5, sizeof atol, &atol);
    api.set_kernel_arg(k.get(), 6, sizeof rtol, &rtol);
    api.set_kernel_arg(k.get(), 7, sizeof key, &key);
    api.set_kernel_arg(k.get(), 8, sizeof(cl_mem), &words);
    const std::size_t global = std::min<std::size_t>(m_items, n);
    if (cl_int err = api.enqueue_nd_range_kernel(m_s.queue.get(), k.get(), 1, nullptr, &global,
                                                 nullptr, 0, nullptr, nullptr);
        err != CL_SUCCESS)
      return cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel(kopt_compare_outputs)",
                        err);
    if (cl_int err = api.enqueue_read_buffer(m_s.queue.get(), words, CL_TRUE, 0, sizeof w, w.data(),
                                             0, nullptr, nullptr);
        err != CL_SUCCESS)
      return fault("clEnqueueReadBuffer(comparison of " + t.name + ")", err);
  }
  std::optional<FirstMismatch> first;
  if (w[k_word_mismatches] > 0 && w[k_word_first] < n) {
    // The two elements of the first mismatch, for the message.
    std::vector<std::byte> g(size), e(size);
    const std::size_t at = static_cast<std::size_t>(w[k_word_first]) * size;
    for (auto [buffer, host] : {std::pair{got, &g}, std::pair{expected, &e}})
      if (cl_int err = api.enqueue_read_buffer(m_s.queue.get(), buffer, CL_TRUE, at, size,
                                               host->data(), 0, nullptr, nullptr);
          err != CL_SUCCESS)
        return fault("clEnqueueReadBuffer(" + t.name + ")", err);
    unmask_element(e, mask, w[k_word_first]);
    first =
        FirstMismatch{load_as_double(g.data(), 0, t.dtype), load_as_double(e.data(), 0, t.dtype)};
  }
  std::vector<std::int64_t> shape = t.shape;
  if (shape.empty()) shape = {static_cast<std::int64_t>(n)};
  out = compare_result_from_words(w, t.name, n, shape, tol, first);
  return std::nullopt;
}

const DeviceVerifyCache::Expected* DeviceVerify::expected_buffer(
    const ExpectedOutputs& expected, std::optional<RunResult>& failure) {
  if (!expected.key.empty())
    for (const auto& e : m_cache.expected)
      if (e.key == expected.key) return &e;
  const OpenclApi& api = *m_s.api;
  const HostTensor& host = *expected.host;
  const std::size_t bytes = host.data.size();
  // The oldest copies go first; a tensor the budget cannot hold beside the golden copies stays
  // on the host.
  while (!m_cache.expected.empty() && !room_for(bytes)) {
    m_cache.expected_bytes -= m_cache.expected.front().bytes;
    m_cache.expected.pop_front();
  }
  if (!room_for(bytes)) return nullptr;
  cl_int err = CL_SUCCESS;
  Buffer b(&api, api.create_buffer(m_s.context.get(), CL_MEM_READ_WRITE,
                                   std::max<std::size_t>(bytes, 1), nullptr, &err));
  if (err != CL_SUCCESS) return nullptr;  // no room after all: compared on the host
  // Copied in and masked in place before any candidate's launch can run again.
  const int width = static_cast<int>(dtype_size(host.dtype));
  const std::uint64_t key = mask_key();
  if (err = api.enqueue_write_buffer(m_s.queue.get(), b.get(), CL_TRUE, 0, bytes, host.data.data(),
                                     0, nullptr, nullptr);
      err != CL_SUCCESS) {
    failure = fault("clEnqueueWriteBuffer(the reference's " + host.name + ")", err);
    return nullptr;
  }
  if (err = mask_copy(b.get(), b.get(), bytes / width, width, key); err != CL_SUCCESS) {
    failure = fault("kopt_mask_copy(the reference's " + host.name + ")", err);
    return nullptr;
  }
  m_cache.expected_bytes += bytes;
  m_cache.expected.push_back({expected.key, bytes, std::move(b), key});
  return &m_cache.expected.back();
}

HashTensor DeviceVerify::hasher(const PreparedKernel& k, const RunJob& job) {
  if (!ok()) return {};
  return [this, &k, &job](std::size_t i, std::uint64_t key,
                          std::uint64_t& out) -> std::optional<RunResult> {
    return hash(k.buffers[i].get(), job.tensors[i].bytes, key, job.tensors[i].name, out);
  };
}

DeviceComparer DeviceVerify::comparer(const PreparedKernel& k, const RunJob& job) {
  if (!ok()) return {};
  DeviceComparer d;
  d.keep = [this, &k, &job](std::size_t i, bool& kept) -> std::optional<RunResult> {
    kept = false;
    const JobTensor& t = job.tensors[i];
    const std::size_t bytes = std::max<std::size_t>(t.bytes, 1);
    if (!room_for(bytes)) return std::nullopt;
    const OpenclApi& api = *m_s.api;
    cl_int err = CL_SUCCESS;
    Kept copy{
        Buffer(&api, api.create_buffer(m_s.context.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err)),
        mask_key()};
    if (err != CL_SUCCESS) return std::nullopt;  // no room: read back
    const int width = static_cast<int>(dtype_size(t.dtype));
    if (err = mask_copy(k.buffers[i].get(), copy.buffer.get(), t.bytes / width, width, copy.mask);
        err != CL_SUCCESS)
      return fault("kopt_mask_copy(golden " + t.name + ")", err);
    m_kept_bytes += bytes;
    m_kept[&k][i] = std::move(copy);
    kept = true;
    return std::nullopt;
  };
  d.compare = [this, &k, &job](std::size_t i, const ExpectedOutputs* expected, Tolerance tol,
                               std::optional<CompareResult>& out) -> std::optional<RunResult> {
    out.reset();
    cl_mem against = nullptr;
    std::uint64_t mask = 0;
    if (expected) {
      std::optional<RunResult> failure;
      const DeviceVerifyCache::Expected* e = expected_buffer(*expected, failure);
      if (failure) return failure;
      if (!e) return std::nullopt;  // no room: the verifier compares on the host
      against = e->buffer.get();
      mask = e->mask;
    } else {
      auto v = m_kept.find(&k);
      if (v == m_kept.end() || !v->second.count(i)) return std::nullopt;
      against = v->second.at(i).buffer.get();
      mask = v->second.at(i).mask;
    }
    CompareResult c;
    if (auto failure = compare(k.buffers[i].get(), against, mask, job.tensors[i], tol, c))
      return failure;
    out = std::move(c);
    return std::nullopt;
  };
  return d;
}

}  // namespace kopt::opencl
