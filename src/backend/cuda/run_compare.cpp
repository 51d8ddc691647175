#include "run_compare.hpp"

#include "../verifier_files.hpp"
#include "kopt/core/entropy.hpp"

namespace kopt::cuda {

RunComparison::RunComparison(const DriverApi& api, const TimerHelpers& helpers, int sm_count,
                             ExpectedOnDevice& cache, const PreparedLaunch& launch)
    : m_launch(launch),
      m_hasher(api, helpers, sm_count),
      m_comparison(api, helpers, sm_count, cache) {
  m_active = !launch.job->compare.empty() && m_hasher.ok() && m_comparison.ok() && helpers.l2;
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
    std::size_t i = 0;
    while (i < job.tensors.size() && job.tensors[i].name != c.name) ++i;
    if (i == job.tensors.size() || job.tensors[i].role == Role::input) continue;
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

}  // namespace kopt::cuda
