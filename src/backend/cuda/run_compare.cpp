#include "run_compare.hpp"

#include "../verifier_files.hpp"
#include "kopt/core/entropy.hpp"

namespace kopt::cuda {
namespace {

// The job tensor an output comparison names (its index), or the count where it names none or
// an input.
std::size_t output_index(const RunJob& job, const std::string& name) {
  std::size_t i = 0;
  while (i < job.tensors.size() && job.tensors[i].name != name) ++i;
  return i < job.tensors.size() && job.tensors[i].role != Role::input ? i : job.tensors.size();
}

}  // namespace

RunComparison::RunComparison(const DriverApi& api, const TimerHelpers& helpers, int sm_count,
                             ExpectedOnDevice& cache, const PreparedLaunch& launch)
    : m_launch(launch),
      m_hasher(api, helpers, sm_count),
      m_comparison(api, helpers, sm_count, cache) {
  m_active = (!launch.job->compare.empty() || launch.job->hash_inputs) && m_hasher.ok() &&
             m_comparison.ok() && helpers.l2;
}

std::optional<RunResult> RunComparison::note_inputs() {
  if (!m_active) return std::nullopt;
  m_key = unpredictable_u64();
  const RunJob& job = *m_launch.job;
  for (std::size_t i = 0; i < job.tensors.size(); ++i) {
    const JobTensor& t = job.tensors[i];
    // Without the checksum it was written with, an input is read back and summed as before.
    if (t.role != Role::input || t.checksum.empty() || t.bytes == 0) continue;
    std::uint64_t h = 0;
    if (auto f = m_hasher.hash(m_launch.buffers[i].get(), t.bytes, m_key, nullptr, t.name, h))
      return f;
    m_before[i] = h;
  }
  return std::nullopt;
}

std::optional<RunResult> RunComparison::settle(RunResult& result) {
  if (!m_active) return std::nullopt;
  const RunJob& job = *m_launch.job;
  for (const auto& [i, before] : m_before) {
    std::uint64_t after = 0;
    const JobTensor& t = job.tensors[i];
    if (auto f = m_hasher.hash(m_launch.buffers[i].get(), t.bytes, m_key, nullptr, t.name, after))
      return f;
    if (after == before) result.input_checksums[t.name] = t.checksum;
  }
  std::size_t judged = 0;
  for (const OutputComparison& c : job.compare) {
    const std::size_t i = output_index(job, c.name);
    if (i == job.tensors.size()) continue;
    if (c.expected.path.empty() || (c.exact && c.exact->path.empty())) continue;
    const JobTensor& t = job.tensors[i];
    // Read from its file only where the device does not hold it already.
    ExpectedOutputs expected{nullptr, verifier_files::file_identity(c.expected.path)};
    if (expected.key.empty()) continue;  // no file: the host's comparison says so
    if (!m_comparison.holds(expected.key)) {
      expected.host = verifier_files::tensor_file(t, c.expected.path);
      if (!expected.host) continue;  // not whole: the host's comparison says so
    }
    // The fp64 reference, of t's elements in f64: read as the reference's file is, once a worker.
    std::shared_ptr<const HostTensor> exact;
    if (c.exact) {
      JobTensor f64 = t;
      f64.dtype = DType::f64;
      f64.bytes = t.bytes / dtype_size(t.dtype) * dtype_size(DType::f64);
      exact = verifier_files::tensor_file(f64, c.exact->path);
      if (!exact) continue;  // not whole: the host's comparison says so
    }
    std::optional<kopt::DeviceComparison> out;
    if (auto f = m_comparison.judge(m_launch, i, expected, exact.get(), c.tolerance, nullptr, out))
      return f;
    if (!out) continue;
    result.compared[c.name] = std::move(*out);
    ++judged;
  }
  if (judged > 0) result.compared_how = "compared on the device";
  return std::nullopt;
}

namespace {

std::string hex_bytes(const char* bytes, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

}  // namespace

std::optional<RunResult> compare_where_kept(const DriverApi& api, const PreparedLaunch& launch,
                                            const KeptComparer& comparer, bool through_files,
                                            RunResult& result) {
  const RunJob& job = *launch.job;
  nlohmann::json outputs = nlohmann::json::object();
  for (const OutputComparison& c : job.compare) {
    const std::size_t i = output_index(job, c.name);
    if (c.expected.key.empty() || i == job.tensors.size() || result.compared.count(c.name))
      continue;
    if (through_files) {
      outputs[c.name] = {{"path", job.tensors[i].output_path.string()}};
      continue;
    }
    // A handle names a whole allocation: the offset says where the output starts in it.
    CUdeviceptr ptr = launch.buffers[i].get(), base = 0;
    std::size_t size = 0;
    CUipcMemHandle handle{};
    if (api.mem_get_address_range(&base, &size, ptr) != CUDA_SUCCESS ||
        api.ipc_get_mem_handle(&handle, base) != CUDA_SUCCESS)
      return std::nullopt;  // not shared: all of them through their files
    outputs[c.name] = {{"handle", hex_bytes(handle.reserved, sizeof handle.reserved)},
                       {"offset", ptr - base}};
  }
  if (outputs.empty() || !comparer) return std::nullopt;
  if (!comparer(job, outputs, result)) return std::nullopt;  // not opened: through files
  if (!result.ok()) return result;
  return std::nullopt;
}

}  // namespace kopt::cuda
