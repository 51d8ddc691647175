#pragma once
// Work skipped under timing is caught. After warm-up, the outputs of one untimed launch are
// the variant's golden output (the orchestrator has checked this very build against the
// reference on the same seed-1 inputs before timing). Before a random ~10 % of the timed
// samples (at least 2 adjacent ones among the first min_samples, drawn from a seed the kernel
// cannot predict) the timer poisons every output tensor outside the timed window, and after the
// sample the outputs are read back and compared with the golden output; so are the outputs
// after the last timed launch. A difference fails the variant as "inconsistent".
//
// An `inout` legitimately changes from launch to launch (a reduction that accumulates into
// it), so it is not poisoned: before the golden launch the timer sets it back to seed 1's
// values (reset_inouts), so that the golden launch can be checked against the reference; of
// the verified samples, one drawn among the first min_samples (not the two early ones, which
// keep the state the launches left: a kernel may count its launches in an inout) and about
// half of the later ones set it back too and compare it with the golden launch's after the
// sample. After the last timed launch, and in graph batches, it is not compared (it holds
// many launches' updates).
//
// The cost is bounded: beyond the two early samples, a drawn sample is poisoned only while
// the time spent verifying stays within 10 % of the wall time, and outputs larger than the
// readback budget get fewer poisoned samples, down to none (then only the last launch is
// compared).
//
// Secret-seed samples: where the job names a secret seed's inputs and the reference's outputs
// for them (JobTensor::secret_input_path, secret_expected_path; every input and output, no
// inout, inputs within k_secret_input_budget; an input the timer draws where the kernel runs,
// by its secret_draw, with no host copy and no bound), two of the first min_samples timed samples
// (not the two early ones) run on inputs nobody has seen, written outside the timed window:
// the first on the secret seed's, its outputs compared with the reference's; the second on a
// mix of the two seeds (each element from one or the other, by a mask drawn at run time:
// valid inputs, content never seen), timed only. Seed 1's inputs are written again after
// each. A kernel that returns answers it did not compute (kept from an earlier call, or
// carried for seed 1) fails as "inconsistent"; one that caches by its inputs' content misses
// on both, which the orchestrator flags (distribution_flags.hpp: secret_slow).
//
// Where the backend can hash a tensor where it is (HashTensor: the CUDA timer's kernel), a
// sample's outputs are not read back when they hold the golden launch's very bytes: the
// golden's keyed hash (measure/keyed_hash.hpp, its key drawn at run time) is taken on the
// device after the golden launch, each compared sample's after it, and only 8 bytes a tensor
// cross. A different hash (an atomic reduction's order, or work skipped) reads the outputs
// back and compares them as before. Then the readback budget bounds only those read backs, not
// the poisoned samples.
//
// Where the backend compares where the outputs are (DeviceComparer: the CUDA and OpenCL timers,
// backend/output_compare_kernel.hpp), nothing is read back to judge: the golden launch's
// outputs are kept on the device (a copy beside the job's tensors, where the device has room)
// and compared there with the reference's (copied to the device once a worker); a sample whose
// hash differs, and a secret sample, are compared there with the golden copy or the reference's
// outputs for the secret inputs; the inputs are checked by their keyed hash, taken before the
// first launch (note_inputs) and again after the golden one. Only a summary and the two elements
// of a first mismatch cross. Where the device has no room, the comparison in question is done
// on the host as before; the record counts what was read back (read_back_bytes).
//
// The backend's timer owns the device calls (poison, read, write, hash, keep, compare); this
// decides when, and judges what it read or what the device summed with the checker's own rule
// (measure/compare.hpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/measure/compare.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {

// Reads job tensor `index` into `host` (already sized to the tensor's bytes); nullopt on
// success, else the failure as a RunResult.
using ReadTensor =
    std::function<std::optional<RunResult>(std::size_t index, std::vector<std::byte>& host)>;
// Writes `host` into job tensor `index` (synchronously); nullopt on success.
using WriteTensor =
    std::function<std::optional<RunResult>(std::size_t index, const std::vector<std::byte>& host)>;
// Draws `recipe` into job tensor `index` where it is (synchronously): every element, or with
// `mix` (not 0) only those mix_takes(mix, i) chooses (tensor_draw.hpp); nullopt on success.
// Empty where the backend has no draw of its own (the inputs' bytes then come from files).
using DrawTensor = std::function<std::optional<RunResult>(
    std::size_t index, const DrawRecipe& recipe, std::uint64_t mix)>;
// The keyed hash (measure/keyed_hash.hpp) of job tensor `index` under `key`, computed where the
// tensor is, into `hash`; nullopt on success. Empty where the backend has none.
using HashTensor = std::function<std::optional<RunResult>(std::size_t index, std::uint64_t key,
                                                          std::uint64_t& hash)>;

// The reference's outputs to compare with: their bytes on the host, and what names them (the
// file, its size and time), by which a backend keeps its copy on the device for later jobs
// without holding the host's.
struct ExpectedOutputs {
  std::shared_ptr<const HostTensor> host;
  std::string key;
};

// The backend's comparison where the tensors are. `keep` copies job tensor `index` beside the
// job's (after the golden launch), `kept` false where the device has no room for it; `compare`
// compares job tensor `index` with its kept copy (`expected` null) or with `expected`'s bytes,
// which it copies to the device once a worker, and leaves `out` empty where the device has no
// room for them (the verifier then compares on the host). Either fails only as the device does.
// `preload`, where given, copies `expected` to the device now (where it has room), so that a
// later compare finds it there: the secret seed's outputs, before the samples whose share of
// the wall time the verification keeps to. `holds`, where given, says whether the outputs named
// `key` (ExpectedOutputs::key) are on the device already: a compare of them then needs no host
// copy, and none is read.
struct DeviceComparer {
  std::function<std::optional<RunResult>(std::size_t index, bool& kept)> keep;
  std::function<std::optional<RunResult>(std::size_t index, const ExpectedOutputs* expected,
                                         Tolerance tol, std::optional<CompareResult>& out)>
      compare;
  std::function<std::optional<RunResult>(const ExpectedOutputs& expected)> preload;
  std::function<bool(const std::string& key)> holds;
  explicit operator bool() const { return keep && compare; }
};

// Bytes of outputs read back per variant for poisoned samples (the golden and the last
// comparison come on top).
inline constexpr std::size_t k_verify_readback_budget = std::size_t{2} << 30;
inline constexpr double k_verify_rate = 0.1;
inline constexpr double k_verify_time_share = 0.1;
inline constexpr std::size_t k_secret_input_budget = std::size_t{1}
                                                     << 30;  // host copies of both seeds' inputs

class OutputVerifier {
 public:
  // `seed`: from std::random_device in the timers, fixed in tests. `device_hash`: the timer
  // passes a HashTensor to take_golden, check_sample and check_last (and note_inputs);
  // `device_compare`: a DeviceComparer too, with the same hash; `device_draw`: the timer drew
  // the job's drawn inputs where the kernel runs and passes a DrawTensor to write_inputs and
  // reset_inouts, which then read no file for them (it needs device_hash: no checksum of
  // theirs exists on the host).
  OutputVerifier(const RunJob& job, const BenchOptions& options, std::uint64_t seed,
                 bool device_hash = false, bool device_compare = false, bool device_draw = false);

  bool active() const { return m_record.enabled; }
  const std::vector<std::size_t>& outputs() const { return m_outputs; }  // indices into job.tensors
  // Whether the outputs are poisoned before timed sample `index` (0-based, this variant's
  // own count) and compared after it. Call once per sample, in order; `wall_elapsed_s` is the
  // bench's wall time so far, which the time spent verifying must stay within a share of.
  bool poison_before(std::size_t index, double wall_elapsed_s);
  // What output `tensor` (an index into job.tensors) is filled with before the sample that
  // poison_before chose: the dtype's NaN poison, or, on the second of the two early samples
  // (compared for sure) and about half of the later ones, a stale fill of finite values that
  // looks written, so a kernel that works only while its output looks unwritten is caught
  // either way.
  Poison fill_for(std::size_t tensor) const;
  // Whether sample `index`, which poison_before chose, runs on inputs nobody has seen: the
  // timer calls write_inputs(write, index) before it (untimed) and write_inputs(write) after
  // check_sample.
  bool secret_before(std::size_t index) const { return m_secret_at.count(index) > 0; }
  // Every input tensor's values for secret sample `secret_sample`, or seed 1's again without
  // one: drawn through `draw` where the timer draws them, else their bytes through `write`. A
  // file of kopt's that cannot be read is the environment's failure, not the kernel's.
  std::optional<RunResult> write_inputs(const WriteTensor& write,
                                        std::optional<std::size_t> secret_sample = {},
                                        const DrawTensor& draw = {});
  // The bytes of input `tensor` (an index into job.tensors) for secret sample `index` (the
  // secret seed's, or the mix), or seed 1's; null when a file cannot be read.
  const std::vector<std::byte>* sample_input(std::size_t tensor, std::size_t index);
  const std::vector<std::byte>* seed_input(std::size_t tensor);
  // Sets every compared inout back to seed 1's values, through `write`: before the golden
  // launch and before a sample poison_before chose (nothing where that sample keeps them, or
  // where none is compared).
  std::optional<RunResult> reset_inouts(const WriteTensor& write, const DrawTensor& draw = {});
  // In graph mode a sample is a batch of launches: poisoning between them is impossible, so
  // the outputs are compared after the batch (and poisoned before it); the record says so.
  void set_batched(int launches_per_sample);

  // Before the first launch of the variant (warm-up included): each input's keyed hash where
  // it is, which take_golden holds the inputs to instead of reading them back. Nothing without
  // a hash.
  std::optional<RunResult> note_inputs(const HashTensor& hash);
  // The golden output; where the job's outputs name the reference's (expected_path), it is
  // checked against them and the inputs against their checksums (or their hashes from
  // note_inputs): a failure is the record's check_failure (the variant is not timed), not the
  // timer's.
  std::optional<RunResult> take_golden(const ReadTensor& read, const HashTensor& hash = {},
                                       const DeviceComparer& device = {});
  // After sample `index`, which poison_before chose.
  std::optional<RunResult> check_sample(const ReadTensor& read, std::size_t index,
                                        const HashTensor& hash = {},
                                        const DeviceComparer& device = {});
  // The check inside the timing job failed (take_golden): the variant is not to be timed.
  bool wrong() const { return !m_record.check_failure.empty(); }
  // After the last timed launch (`samples` samples taken): compared unless the last sample was
  // (nothing when none was taken, as for a wrong variant).
  std::optional<RunResult> check_last(const ReadTensor& read, std::size_t samples,
                                      const HashTensor& hash = {},
                                      const DeviceComparer& device = {});

  SampleVerification record() const {
    SampleVerification r = m_record;
    r.verify_s = m_spent_s;
    return r;
  }

 private:
  std::optional<RunResult> compare(const ReadTensor& read, const HashTensor& hash,
                                   const DeviceComparer& device, std::size_t index,
                                   const std::string& when, bool poisoned);
  std::optional<RunResult> check_reference(const ReadTensor& read, const HashTensor& hash,
                                           const DeviceComparer& device);
  std::optional<RunResult> check_inputs(const ReadTensor& read, const HashTensor& hash);
  std::optional<RunResult> preload_secret(const DeviceComparer& device);
  // Output `t`'s secret seed's reference outputs: only their key where the device holds them
  // already (DeviceComparer::holds), else their bytes too; nullopt where the file is missing or
  // of another size.
  std::optional<ExpectedOutputs> secret_expected(const JobTensor& t,
                                                 const DeviceComparer& device) const;
  std::optional<RunResult> check_secret(const ReadTensor& read, const DeviceComparer& device,
                                        std::size_t index, const std::string& when);
  // Job tensor `index` against `expected` at `tol`: with `on_host`, a host copy of its bytes,
  // where it holds them; else on the device where it can (`device`); else read back (counted)
  // and compared on the host.
  std::optional<RunResult> judge(const ReadTensor& read, const DeviceComparer& device,
                                 std::size_t index, const ExpectedOutputs& expected, Tolerance tol,
                                 CompareResult& out, const HostTensor* on_host = nullptr);
  const std::vector<std::byte>* input_bytes(std::size_t tensor, bool secret);
  bool has_inouts() const { return m_compared.size() > m_outputs.size(); }
  // Whether the timer draws job tensor `t` where the kernel runs (its seed-1 values).
  bool drawn_here(const JobTensor& t) const { return m_device_draw && t.draw.has_value(); }
  // Whether inouts are set back and compared now: at the golden launch, and on a sample that
  // sets them back (m_reset); never in graph batches.
  bool inouts_compared() const;
  // Whether m_compared[k] is compared after a sample (`poisoned`: one poison_before chose, or
  // the golden launch): an inout only where inouts_compared().
  bool compared(std::size_t k, bool poisoned) const {
    return k < m_outputs.size() || (poisoned && inouts_compared());
  }
  bool mixed(std::size_t index) const {
    return !m_secret_at.empty() && index == *m_secret_at.rbegin();
  }

  const RunJob& m_job;
  std::vector<std::size_t> m_outputs;
  std::vector<std::size_t> m_compared;  // m_outputs, then the inouts that can be set back
  std::vector<HostTensor> m_golden;     // one per tensor of m_compared, in its order; empty
                                        // data where it is kept on the device only
  std::vector<bool> m_kept;             // one per tensor of m_compared: kept on the device
  std::mt19937_64 m_rng;
  std::set<std::size_t> m_early;  // two sample indices verified for sure
  std::size_t m_max_poisoned = 0;
  std::size_t m_bytes = 0;  // of the compared tensors
  bool m_device_hash = false;
  bool m_device_compare = false;
  bool m_device_draw = false;
  std::uint64_t m_mix_key = 0;                        // the device's mix, drawn at its first use
  std::uint64_t m_input_key = 0;                      // from the seed: nothing the kernel sees
  std::map<std::size_t, std::uint64_t> m_input_hash;  // by job tensor index
  std::uint64_t m_hash_key = 0;                       // drawn at take_golden
  std::vector<std::uint64_t> m_golden_hash;           // one per tensor of m_compared; empty: none
  std::size_t m_read_back = 0;                        // bytes read back after poisoned samples
  std::size_t m_chosen = 0;
  std::size_t m_held_back = 0;  // drawn, but not poisoned: verifying had used its share of the time
  double m_spent_s = 0;         // reading back and comparing after poisoned samples
  std::optional<std::size_t> m_last_poisoned;
  bool m_stale = false;  // this sample's fill is the stale one
  std::uint32_t m_stale_bits = 0;
  int m_batch = 1;
  std::set<std::size_t> m_secret_at;  // sample indices that run on the secret seed's inputs
  std::set<std::size_t> m_reset_at;   // a sample index that sets the inouts back, for sure
  bool m_reset = false;               // this sample sets the inouts back
  bool m_golden_taken = false;        // take_golden has run: the samples come next
  // Inputs by tensor index: shared by the worker's verifiers (read or mixed once per file).
  std::map<std::size_t, std::shared_ptr<const HostTensor>> m_secret_in, m_seed_in, m_mixed_in;
  SampleVerification m_record;
};

}  // namespace kopt
