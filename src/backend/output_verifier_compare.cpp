// OutputVerifier's comparisons: the golden output against the reference, each verified sample
// against the golden (by its keyed hash on the device where it can), the secret seed's samples
// against the reference's outputs for those inputs.
#include <fmt/format.h>

#include <chrono>

#include "kopt/backend/output_verifier.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/measure/compare.hpp"
#include "verifier_files.hpp"

namespace kopt {
namespace {

using verifier_files::file_identity;
using verifier_files::host_tensor;
using verifier_files::tensor_file;

std::string index_text(const std::vector<std::int64_t>& index) {
  std::string s = "[";
  for (std::size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "]";
}

// Where outputs are read back: one buffer per thread, shared by every variant of a job (a
// batch of candidates would otherwise hold one output-sized buffer each beside its golden).
std::vector<std::byte>& readback_scratch() {
  thread_local std::vector<std::byte> scratch;
  return scratch;
}

// What a difference means: elements still holding the poison are work a timed launch skipped.
std::string mismatch_text(const CompareResult& c, bool poisoned, bool stale, bool inout) {
  std::string s = fmt::format(
      "output '{}': {} of {} elements differ from the variant's own output of an untimed "
      "launch after warm-up",
      c.tensor, c.mismatches, c.numel);
  if (!c.first_mismatches.empty()) {
    const Mismatch& m = c.first_mismatches.front();
    s += fmt::format("; first at {}: got {:g}, expected {:g}", index_text(m.index), m.got,
                     m.expected);
  }
  if (inout)
    s += "; it was set back to its first values before the launch: a timed launch skipped or "
         "changed its update";
  else if (poisoned && stale)
    s += "; the outputs had been filled with finite values that look written: the kernel skipped "
         "or cut short its "
         "work on a timed launch whose output looked done";
  else if (poisoned && c.unwritten > 0)
    s += fmt::format("; {} {} left poisoned: the kernel skipped its work on a timed launch",
                     (c.unwritten == c.numel ? "all " : "") + std::to_string(c.unwritten),
                     c.unwritten == 1 ? "is" : "are");
  else if (poisoned)
    s += "; none is left poisoned: a timed launch computed something else than the untimed one";
  else
    s += ": a timed launch computed something else than the untimed one";
  return s;
}

}  // namespace

std::optional<RunResult> OutputVerifier::note_inputs(const HashTensor& hash) {
  m_input_hash.clear();
  if (!m_record.enabled || !hash) return std::nullopt;
  for (std::size_t i = 0; i < m_job.tensors.size(); ++i) {
    const JobTensor& t = m_job.tensors[i];
    if (t.role != Role::input || t.checksum.empty() || t.bytes == 0) continue;
    std::uint64_t h = 0;
    if (auto failure = hash(i, m_input_key, h)) return failure;
    m_input_hash[i] = h;
  }
  return std::nullopt;
}

std::optional<RunResult> OutputVerifier::take_golden(const ReadTensor& read, const HashTensor& hash,
                                                     const DeviceComparer& device) {
  if (!m_record.enabled) return std::nullopt;
  m_golden.clear();
  m_golden_hash.clear();
  m_kept.clear();
  for (std::size_t i : m_compared) {
    // Kept where it is, beside the job's tensors, where the device has room: nothing read back.
    bool kept = false;
    if (m_device_compare && device)
      if (auto failure = device.keep(i, kept)) return failure;
    m_kept.push_back(kept);
    if (kept) {
      m_golden.push_back(host_tensor(m_job.tensors[i], {}));
      continue;
    }
    std::vector<std::byte> host(m_job.tensors[i].bytes);
    if (auto failure = read(i, host)) return failure;
    m_record.read_back_bytes += host.size();
    m_golden.push_back(host_tensor(m_job.tensors[i], std::move(host)));
  }
  if (m_device_hash && hash) {
    m_hash_key = m_rng();
    for (std::size_t i : m_compared) {
      std::uint64_t h = 0;
      if (auto failure = hash(i, m_hash_key, h)) return failure;
      m_golden_hash.push_back(h);
    }
  }
  auto failure = check_reference(read, hash, device);
  m_golden_taken = true;
  if (!failure && !m_secret_at.empty() && m_device_compare && device.preload)
    failure = preload_secret(device);
  return failure;
}

// The secret seed's reference outputs on the device before the samples: copying GBs there is
// done once a worker, not charged to the first secret sample's share of the wall time (where
// it held back the poisoned samples that came after it).
std::optional<RunResult> OutputVerifier::preload_secret(const DeviceComparer& device) {
  for (std::size_t i : m_outputs) {
    auto expected = secret_expected(m_job.tensors[i], device);
    // Missing (check_secret says so), or on the device already (an earlier variant's).
    if (!expected || !expected->host) continue;
    if (auto failure = device.preload(*expected)) return failure;
  }
  return std::nullopt;
}

std::optional<ExpectedOutputs> OutputVerifier::secret_expected(const JobTensor& t,
                                                               const DeviceComparer& device) const {
  ExpectedOutputs e{nullptr, file_identity(t.secret_expected_path)};
  if (e.key.empty()) return std::nullopt;
  if (m_device_compare && device.holds && device.holds(e.key)) return e;
  e.host = tensor_file(t, t.secret_expected_path);
  if (!e.host) return std::nullopt;
  return e;
}

std::optional<RunResult> OutputVerifier::judge(const ReadTensor& read, const DeviceComparer& device,
                                               std::size_t index, const ExpectedOutputs& expected,
                                               Tolerance tol, CompareResult& out,
                                               const HostTensor* on_host) {
  if (m_device_compare && device && !(on_host && !on_host->data.empty())) {
    std::optional<CompareResult> summed;
    if (auto failure = device.compare(index, &expected, tol, summed)) return failure;
    if (summed) {
      ++m_record.compared_on_device;
      out = std::move(*summed);
      return std::nullopt;
    }
  }
  if (on_host && !on_host->data.empty()) {
    out = compare_tensors(*on_host, *expected.host, tol, 1);
    return std::nullopt;
  }
  const JobTensor& t = m_job.tensors[index];
  if (!expected.host) {  // held on the device (DeviceComparer::holds), yet not compared there
    RunResult r{RunStatus::launch_failed, "the reference's outputs for " + t.name +
                                              " were on the device, not compared there"};
    r.environment = true;
    return r;
  }
  std::vector<std::byte>& host = readback_scratch();
  host.resize(t.bytes);
  if (auto failure = read(index, host)) return failure;
  m_record.read_back_bytes += host.size();
  out = compare_tensors(host_tensor(t, host), *expected.host, tol, 1);
  return std::nullopt;
}

std::optional<RunResult> OutputVerifier::check_reference(const ReadTensor& read,
                                                         const HashTensor& hash,
                                                         const DeviceComparer& device) {
  bool asked = false;
  for (std::size_t k = 0; k < m_compared.size(); ++k)
    asked = asked || (compared(k, true) && !m_job.tensors[m_compared[k]].expected_path.empty());
  if (!asked) return std::nullopt;
  m_record.reference_checked = true;
  for (std::size_t k = 0; k < m_compared.size() && m_record.check_failure.empty(); ++k) {
    const JobTensor& t = m_job.tensors[m_compared[k]];
    if (t.expected_path.empty() || !compared(k, true)) continue;
    auto expected = tensor_file(t, t.expected_path);
    if (!expected) {
      m_record.check_failure =
          "the reference's output " + t.expected_path.string() + " is missing or of another size";
      break;
    }
    // The job's tensor still holds the golden launch's outputs: where the device cannot
    // compare, they are read back once more.
    CompareResult c;
    if (auto failure =
            judge(read, device, m_compared[k], {expected, file_identity(t.expected_path)},
                  t.tolerance, c, &m_golden[k]))
      return failure;
    if (c.passed) continue;
    m_record.check_failure = fmt::format("output {}: {} of {} elements differ from the reference",
                                         t.name, c.mismatches, c.numel);
    if (!c.first_mismatches.empty()) {
      const auto& m = c.first_mismatches.front();
      m_record.check_failure +=
          fmt::format(" (first at {}: {} against {})", index_text(m.index), m.got, m.expected);
    }
    if (c.unwritten > 0) m_record.check_failure += fmt::format("; {} never written", c.unwritten);
  }
  if (!m_record.check_failure.empty()) return std::nullopt;
  return check_inputs(read, hash);
}

// Inputs are read-only: one the kernel wrote is a failure, as in kopt check. By the hash taken
// before the first launch where there is one (note_inputs), else by reading it back.
std::optional<RunResult> OutputVerifier::check_inputs(const ReadTensor& read,
                                                      const HashTensor& hash) {
  for (std::size_t i = 0; i < m_job.tensors.size() && m_record.check_failure.empty(); ++i) {
    const JobTensor& t = m_job.tensors[i];
    if (t.role != Role::input || t.checksum.empty()) continue;
    if (auto noted = m_input_hash.find(i); hash && noted != m_input_hash.end()) {
      std::uint64_t h = 0;
      if (auto failure = hash(i, m_input_key, h)) return failure;
      if (h != noted->second)
        m_record.check_failure = "the kernel modified input tensor '" + t.name + "'";
      continue;
    }
    std::vector<std::byte> host(t.bytes);
    if (auto failure = read(i, host)) return failure;
    m_record.read_back_bytes += host.size();
    if (hex64(checksum64(host)) != t.checksum)
      m_record.check_failure = "the kernel modified input tensor '" + t.name + "'";
  }
  return std::nullopt;
}

std::optional<RunResult> OutputVerifier::check_sample(const ReadTensor& read, std::size_t index,
                                                      const HashTensor& hash,
                                                      const DeviceComparer& device) {
  auto t0 = std::chrono::steady_clock::now();
  struct Spent {  // counted however the comparison ends
    double& total;
    std::chrono::steady_clock::time_point t0;
    ~Spent() {
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } spent{m_spent_s, t0};
  ++m_record.poisoned_samples;
  m_last_poisoned = index;
  std::string fill = m_stale ? "filled with finite stale values" : "poisoned";
  if (secret_before(index) && mixed(index)) {  // no reference for the mix: timed only
    m_record.secret_samples.push_back(static_cast<std::int64_t>(index));
    return std::nullopt;
  }
  if (secret_before(index))
    return check_secret(
        read, device, index,
        fmt::format("timed sample samples_s[{}] ran on a secret seed's inputs (drawn at "
                    "run time, written before it; outputs {} before it)",
                    index, fill));
  std::string when =
      m_batch > 1 ? fmt::format("graph batch samples_s[{}] ({} launches, outputs {} before it)",
                                index, m_batch, fill)
                  : fmt::format("timed sample samples_s[{}] (outputs {} before it)", index, fill);
  return compare(read, hash, device, index, when, true);
}

// A secret sample's outputs against the reference's for the secret inputs, at the checker's
// tolerance.
std::optional<RunResult> OutputVerifier::check_secret(const ReadTensor& read,
                                                      const DeviceComparer& device,
                                                      std::size_t index, const std::string& when) {
  m_record.secret_samples.push_back(static_cast<std::int64_t>(index));
  for (std::size_t k = 0; k < m_outputs.size(); ++k) {
    const JobTensor& t = m_job.tensors[m_outputs[k]];
    auto expected = secret_expected(t, device);
    if (!expected) {
      m_record.failed_sample = static_cast<std::int64_t>(index);
      m_record.failure = when + ": the reference's output for the secret seed " +
                         t.secret_expected_path.string() + " is missing or of another size";
      return std::nullopt;
    }
    CompareResult c;
    if (auto failure = judge(read, device, m_outputs[k], *expected, t.tolerance, c)) return failure;
    if (c.passed) continue;
    m_record.failed_sample = static_cast<std::int64_t>(index);
    m_record.failure = fmt::format(
        "{}: output '{}': {} of {} elements differ from the reference's outputs for those "
        "inputs",
        when, c.tensor, c.mismatches, c.numel);
    if (!c.first_mismatches.empty()) {
      const Mismatch& m = c.first_mismatches.front();
      m_record.failure += fmt::format("; first at {}: got {:g}, expected {:g}", index_text(m.index),
                                      m.got, m.expected);
    }
    m_record.failure +=
        c.unwritten > 0
            ? fmt::format("; {} left as they were before it: the kernel skipped its work",
                          c.unwritten)
            : "; the kernel returned answers it did not compute for these inputs (kept from an "
              "earlier "
              "call, or carried for seed 1)";
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<RunResult> OutputVerifier::check_last(const ReadTensor& read, std::size_t samples,
                                                    const HashTensor& hash,
                                                    const DeviceComparer& device) {
  if (!m_record.enabled || m_record.failed() || samples == 0) return std::nullopt;
  if (has_inouts())
    m_record.note += std::string(m_record.note.empty() ? "" : "; ") +
                     "inout tensors compared after the golden launch and the verified samples "
                     "that set them back to seed 1's values, not after the last launch (it holds "
                     "every timed launch's update)";
  m_record.last_checked = !m_outputs.empty();
  if (m_outputs.empty()) return std::nullopt;
  if (m_held_back > 0)
    m_record.note +=
        std::string(m_record.note.empty() ? "" : "; ") +
        fmt::format(
            "{} more drawn sample(s) were not poisoned, to keep verifying within {:.0f} % of the "
            "wall time",
            m_held_back, 100 * k_verify_time_share);
  if (m_last_poisoned == samples - 1) return std::nullopt;  // that very launch was compared
  return compare(read, hash, device, samples - 1,
                 fmt::format("after the last timed launch (samples_s[{}])", samples - 1), false);
}

std::optional<RunResult> OutputVerifier::compare(const ReadTensor& read, const HashTensor& hash,
                                                 const DeviceComparer& device, std::size_t index,
                                                 const std::string& when, bool poisoned) {
  bool all_hashed = true;
  for (std::size_t k = 0; k < m_compared.size(); ++k) {
    if (!compared(k, poisoned)) continue;
    const JobTensor& t = m_job.tensors[m_compared[k]];
    // The golden's bytes by their keyed hash, where they are: nothing to read back.
    if (hash && k < m_golden_hash.size()) {
      std::uint64_t h = 0;
      if (auto failure = hash(m_compared[k], m_hash_key, h)) return failure;
      if (h == m_golden_hash[k]) continue;
    }
    all_hashed = false;
    // Two outputs within the tolerance of the reference may differ by twice it (an atomic
    // reduction's order): the checker's comparison, at twice the checker's tolerance.
    Tolerance tol{2 * t.tolerance.atol, 2 * t.tolerance.rtol};
    std::optional<CompareResult> c;
    if (k < m_kept.size() && m_kept[k]) {  // against the golden's copy on the device
      if (!device)
        return RunResult{RunStatus::launch_failed,
                         "output " + t.name + ": kept on the device, compared without the device"};
      if (auto failure = device.compare(m_compared[k], nullptr, tol, c)) return failure;
      if (!c)
        return RunResult{RunStatus::launch_failed,
                         "output " + t.name +
                             ": the golden launch's copy on the device could not "
                             "be compared"};
      ++m_record.compared_on_device;
    } else {
      m_read_back += t.bytes;
      m_record.read_back_bytes += t.bytes;
      std::vector<std::byte>& host = readback_scratch();
      host.resize(t.bytes);
      if (auto failure = read(m_compared[k], host)) return failure;
      // The same bytes are the same values: the element-by-element comparison only for a
      // difference.
      if (std::memcmp(host.data(), m_golden[k].data.data(), host.size()) == 0) continue;
      c = compare_tensors(host_tensor(t, host), m_golden[k], tol, 1);
    }
    if (!c->passed) {
      m_record.failed_sample = static_cast<std::int64_t>(index);
      m_record.failure =
          when + ": " + mismatch_text(*c, poisoned, poisoned && m_stale, t.role == Role::inout);
      return std::nullopt;
    }
  }
  if (all_hashed && !m_golden_hash.empty()) ++m_record.device_compared;
  return std::nullopt;
}

}  // namespace kopt
