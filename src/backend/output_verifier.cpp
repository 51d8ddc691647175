#include "kopt/backend/output_verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>

#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "verifier_files.hpp"

namespace kopt {

namespace verifier_files {

HostTensor host_tensor(const JobTensor& t, std::vector<std::byte> data) {
  std::vector<std::int64_t> shape = t.shape;
  if (shape.empty()) shape = {static_cast<std::int64_t>(t.bytes / dtype_size(t.dtype))};
  return HostTensor{t.name, t.dtype, std::move(shape), std::move(data)};
}

std::string file_identity(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) return "";
  const auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
  if (ec) return "";
  return file.string() + "|" + std::to_string(size) + "|" + std::to_string(mtime);
}

std::shared_ptr<const HostTensor> tensor_file(const JobTensor& t,
                                              const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  constexpr std::uintmax_t k_kept_bytes = std::uintmax_t{1} << 30;
  static std::mutex mutex;
  static std::deque<std::pair<std::string, std::shared_ptr<const HostTensor>>> kept;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec || size != t.bytes) return nullptr;
  const std::string key = file_identity(file);
  if (key.empty()) return nullptr;
  std::lock_guard lock(mutex);
  for (const auto& [k, tensor] : kept)
    if (k == key) return tensor;
  auto bytes = read_binary_file(file);
  if (!bytes || bytes->size() != t.bytes) return nullptr;
  auto tensor = std::make_shared<const HostTensor>(host_tensor(t, std::move(*bytes)));
  if (size > k_kept_bytes) return tensor;
  std::uintmax_t total = size;
  for (const auto& [k, kt] : kept) total += kt->data.size();
  while (!kept.empty() && total > k_kept_bytes) {
    total -= kept.front().second->data.size();
    kept.pop_front();
  }
  kept.emplace_back(key, tensor);
  return tensor;
}

}  // namespace verifier_files

using verifier_files::host_tensor;
using verifier_files::tensor_file;

OutputVerifier::OutputVerifier(const RunJob& job, const BenchOptions& options, std::uint64_t seed,
                               bool device_hash, bool device_compare, bool device_draw)
    : m_job(job),
      m_rng(seed),
      m_device_hash(device_hash),
      m_device_compare(device_compare),
      m_device_draw(device_draw && device_hash),
      m_input_key(seed ^ 0xa0761d6478bd642full) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < job.tensors.size(); ++i)
    if (job.tensors[i].role == Role::output && job.tensors[i].bytes > 0) {
      m_outputs.push_back(i);
      bytes += job.tensors[i].bytes;
    }
  m_compared = m_outputs;
  // An inout is compared where it can be set back to its first values before the launch.
  for (std::size_t i = 0; i < job.tensors.size(); ++i)
    if (job.tensors[i].role == Role::inout && job.tensors[i].bytes > 0 &&
        (!job.tensors[i].input_path.empty() || drawn_here(job.tensors[i]))) {
      m_compared.push_back(i);
      bytes += job.tensors[i].bytes;
    }
  m_record.enabled = options.verify_samples && !m_compared.empty();
  if (!m_record.enabled) return;
  m_bytes = bytes;
  // Compared by their hash on the device, the samples read back only where it differs: the
  // budget bounds those (poison_before), not the poisoned samples.
  m_max_poisoned = m_device_hash || m_device_compare ? std::numeric_limits<std::size_t>::max()
                                                     : k_verify_readback_budget / bytes;
  if (m_max_poisoned == 0)
    m_record.note = "outputs of " + human_bytes(bytes) + " exceed the readback budget of " +
                    human_bytes(k_verify_readback_budget) +
                    ": no timed sample is poisoned, only the last launch is compared";
  else if (m_max_poisoned < 10)
    m_record.note =
        fmt::format("outputs of {}: at most {} poisoned sample(s) within the readback budget of {}",
                    human_bytes(bytes), m_max_poisoned, human_bytes(k_verify_readback_budget));
  // Two samples among the first min_samples, which every series reaches, are verified for sure,
  // and they are adjacent: a kernel that skips every other launch (a launch counter) skips one
  // of them whichever the start, where two drawn apart both missed its skips a time in four
  // (found in CI on PoCL: such a kernel timed as a result, its poisoned samples all on launches
  // that worked).
  std::size_t first = std::max<std::size_t>(2, options.rule.min_samples);
  std::uniform_int_distribution<std::size_t> pick(0, first - 1);
  std::size_t start = std::uniform_int_distribution<std::size_t>(0, first - 2)(m_rng);
  m_early = {start, start + 1};
  // Two more of them run on the secret seed's inputs, when the job names them.
  // They are read back (compared with the reference's files on the host) whatever the hash:
  // the readback budget decides, as without it; compared on the device, nothing is read back.
  // An input drawn where the kernel runs needs no host copy of either seed's values.
  bool secret = first >= 4 && (m_device_compare || k_verify_readback_budget / bytes >= 4);
  std::size_t input_bytes = 0;
  for (const auto& t : job.tensors) {
    if (t.role == Role::inout) secret = false;
    if (t.role == Role::input && drawn_here(t)) {
      secret = secret && t.secret_draw.has_value();
    } else if (t.role == Role::input) {
      secret = secret && !t.secret_input_path.empty();
      input_bytes += t.bytes;
    }
    if (t.role == Role::output) secret = secret && !t.secret_expected_path.empty();
  }
  if (secret && 2 * input_bytes > k_secret_input_budget) {
    m_record.note += std::string(m_record.note.empty() ? "" : "; ") + "inputs of " +
                     human_bytes(input_bytes) +
                     ": no secret-seed sample (host copies of both seeds' "
                     "inputs would exceed " +
                     human_bytes(k_secret_input_budget) + ")";
    secret = false;
  }
  while (secret && m_secret_at.size() < 2)
    if (std::size_t i = pick(m_rng); !m_early.count(i)) m_secret_at.insert(i);
  // One more of them sets the inouts back first (no secret samples where there is an inout).
  while (has_inouts() && first >= 3 && m_reset_at.empty())
    if (std::size_t i = pick(m_rng); !m_early.count(i)) m_reset_at.insert(i);
}

const std::vector<std::byte>* OutputVerifier::input_bytes(std::size_t tensor, bool secret) {
  auto& kept = secret ? m_secret_in : m_seed_in;
  if (auto it = kept.find(tensor); it != kept.end()) return &it->second.get()->data;
  const JobTensor& t = m_job.tensors[tensor];
  auto bytes = tensor_file(t, secret ? t.secret_input_path : t.input_path);
  if (!bytes) return nullptr;
  return &(kept[tensor] = bytes).get()->data;
}

const std::vector<std::byte>* OutputVerifier::sample_input(std::size_t tensor, std::size_t index) {
  if (!mixed(index)) return input_bytes(tensor, true);
  if (auto it = m_mixed_in.find(tensor); it != m_mixed_in.end()) return &it->second.get()->data;
  const std::vector<std::byte>* secret = input_bytes(tensor, true);
  const std::vector<std::byte>* seed = input_bytes(tensor, false);
  if (!secret || !seed) return nullptr;
  // One mix per pair of files in a worker, its mask drawn (64 elements a draw) at first use.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const HostTensor>> mixes;
  const JobTensor& t = m_job.tensors[tensor];
  std::string key = t.input_path.string() + "|" + t.secret_input_path.string();
  std::lock_guard lock(mutex);
  std::shared_ptr<const HostTensor> mix;
  if (auto it = mixes.find(key); it != mixes.end()) mix = it->second;
  if (!mix) {
    std::vector<std::byte> bytes = *seed;
    const std::size_t width = dtype_size(t.dtype);
    std::uint64_t mask = 0;
    for (std::size_t e = 0, k = 0; e + width <= bytes.size(); e += width, ++k) {
      if (k % 64 == 0) mask = m_rng();
      if ((mask >> (k % 64)) & 1) std::memcpy(bytes.data() + e, secret->data() + e, width);
    }
    mix = std::make_shared<const HostTensor>(host_tensor(t, std::move(bytes)));
    if (mixes.size() >= 8) mixes.clear();  // a worker's jobs come from few bench calls
    mixes[key] = mix;
  }
  return &(m_mixed_in[tensor] = mix).get()->data;
}

const std::vector<std::byte>* OutputVerifier::seed_input(std::size_t tensor) {
  return input_bytes(tensor, false);
}

namespace {
// kopt's own input files are the environment's, never the kernel's verdict.
RunResult unreadable(const std::string& what) {
  RunResult r{RunStatus::launch_failed, "cannot read " + what};
  r.environment = true;
  return r;
}
}  // namespace

std::optional<RunResult> OutputVerifier::write_inputs(const WriteTensor& write,
                                                      std::optional<std::size_t> secret_sample,
                                                      const DrawTensor& draw) {
  for (std::size_t i = 0; i < m_job.tensors.size(); ++i) {
    const JobTensor& t = m_job.tensors[i];
    if (t.role != Role::input || t.bytes == 0) continue;
    if (drawn_here(t)) {
      if (!draw) return unreadable("the input " + t.name + ": the timer gave no draw for it");
      if (secret_sample && !t.secret_draw)
        return unreadable("the secret seed's input " + t.name + ": no recipe");
      const bool mix = secret_sample && mixed(*secret_sample);
      if (mix && m_mix_key == 0) m_mix_key = m_rng() | 1;  // at run time: the mask is unknown
      std::optional<RunResult> failure =
          draw(i, secret_sample && !mix ? *t.secret_draw : *t.draw, 0);
      if (!failure && mix) failure = draw(i, *t.secret_draw, m_mix_key);
      if (failure) return failure;
      continue;
    }
    const std::vector<std::byte>* bytes =
        secret_sample ? sample_input(i, *secret_sample) : seed_input(i);
    if (!bytes)
      return unreadable(std::string(secret_sample ? "the secret seed's" : "the seed's") +
                        " input " + t.name);
    if (auto failure = write(i, *bytes)) return failure;
  }
  return std::nullopt;
}

void OutputVerifier::set_batched(int launches_per_sample) {
  m_batch = launches_per_sample;
  if (m_batch > 1 && m_record.enabled)
    m_record.note +=
        std::string(m_record.note.empty() ? "" : "; ") +
        fmt::format(
            "graph batches of {} launches: outputs cannot be poisoned between the launches of a "
            "batch, so they are poisoned before a batch and compared after it{}",
            m_batch,
            has_inouts() ? "; inout tensors are not compared (a batch updates them once per launch)"
                         : "");
}

bool OutputVerifier::inouts_compared() const {
  return has_inouts() && m_batch <= 1 && (!m_golden_taken || m_reset);
}

std::optional<RunResult> OutputVerifier::reset_inouts(const WriteTensor& write,
                                                      const DrawTensor& draw) {
  if (!m_record.enabled || !inouts_compared()) return std::nullopt;
  if (m_golden_taken) ++m_record.reset_samples;
  for (std::size_t k = m_outputs.size(); k < m_compared.size(); ++k) {
    const JobTensor& t = m_job.tensors[m_compared[k]];
    if (drawn_here(t)) {
      if (!draw) return unreadable("the seed's values of inout " + t.name + ": no draw for it");
      if (auto failure = draw(m_compared[k], *t.draw, 0)) return failure;
      continue;
    }
    const std::vector<std::byte>* bytes = seed_input(m_compared[k]);
    if (!bytes) return unreadable("the seed's values of inout " + t.name);
    if (auto failure = write(m_compared[k], *bytes)) return failure;
  }
  return std::nullopt;
}

bool OutputVerifier::poison_before(std::size_t index, double wall_elapsed_s) {
  bool draw = std::bernoulli_distribution(k_verify_rate)(
      m_rng);  // drawn every time: the choice stays spread out
  if (!m_record.enabled || m_record.failed() || m_chosen >= m_max_poisoned) return false;
  bool early =
      m_early.count(index) > 0 || m_secret_at.count(index) > 0 || m_reset_at.count(index) > 0;
  if (!draw && !early) return false;
  // A drawn sample never takes the place of an early one still to come (the budget of poisoned
  // samples is small when outputs are large).
  std::size_t reserved = 0;
  for (const auto* set : {&m_early, &m_secret_at, &m_reset_at})
    reserved += static_cast<std::size_t>(
        std::count_if(set->begin(), set->end(), [&](std::size_t i) { return i > index; }));
  if (!early && m_chosen + reserved >= m_max_poisoned) return false;
  if (!early && m_device_hash && m_read_back + m_bytes > k_verify_readback_budget) return false;
  if (!early && m_spent_s > k_verify_time_share * wall_elapsed_s) {
    ++m_held_back;
    return false;
  }
  ++m_chosen;
  // Of the two early samples, both compared for sure, the first gets the NaN poison and the
  // second the stale fill; samples before the second get the NaN poison, later ones either.
  // Decided by the index, not by the count of samples poisoned so far: the second poisoned
  // sample may be the secret seed's mixed one, timed but not compared, and a stale fill spent
  // there left a kernel that skips outputs which look written timed as a result (found in CI on
  // PoCL, about one run in three).
  const std::size_t second = *m_early.rbegin();
  m_stale = index == second || (index > second && std::bernoulli_distribution(0.5)(m_rng));
  // Inouts are set back before the sample drawn for it and half of the other drawn ones; the two
  // early samples keep the state the launches left (a kernel may keep its launch count there).
  m_reset = has_inouts() && (m_reset_at.count(index) ||
                             (!m_early.count(index) && std::bernoulli_distribution(0.5)(m_rng)));
  m_stale_bits = static_cast<std::uint32_t>(m_rng());
  return true;
}

Poison OutputVerifier::fill_for(std::size_t tensor) const {
  DType t = m_job.tensors[tensor].dtype;
  return m_stale ? stale_fill_for(t, m_stale_bits) : poison_for(t);
}

}  // namespace kopt
