#pragma once
// Timing jobs for the worker: one kernel, or two measured interleaved (A B B A ...), with
// the sampling policy; and what comes back: raw samples with their provenance.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/device_info.hpp"
#include "kopt/backend/run_job.hpp"
#include "kopt/core/enum_names.hpp"
#include "kopt/measure/ceiling.hpp"
#include "kopt/measure/statistics.hpp"

namespace kopt {

enum class CacheMode { cold, hot };
std::string_view cache_mode_name(CacheMode m);

// How the L2 is flushed before a cold sample: `read` streams a buffer of twice the L2's
// size through it and leaves clean lines; `write` memsets it and leaves dirty lines whose
// write-back the timed kernel then pays for (what triton's do_bench does). `evict` is what a
// CPU device that computes in kopt's memory does instead, whatever was asked: the tensors' own
// cache lines written back and evicted by address (backend/opencl/host_cache.hpp).
enum class FlushMethod { read, write, evict };
template <>
struct EnumNames<FlushMethod> {
  static constexpr std::array<std::pair<FlushMethod, std::string_view>, 3> table{
      {{FlushMethod::read, "read"}, {FlushMethod::write, "write"}, {FlushMethod::evict, "evict"}}};
};
inline std::string_view flush_method_name(FlushMethod f) {
  return name_of(f);
}

// Where timed samples' outputs are compared (output_verifier.hpp): `automatic` on the device
// where it is no CPU (a CPU device's memory is the host's: a read back is a copy, and the host's
// comparison, with its byte-for-byte shortcut, took a third of the time of the device's kernels
// on PoCL), `device` wherever the device can, `host` read back as before.
enum class VerifyOn { automatic, device, host };
template <>
struct EnumNames<VerifyOn> {
  static constexpr std::array<std::pair<VerifyOn, std::string_view>, 3> table{
      {{VerifyOn::automatic, "auto"}, {VerifyOn::device, "device"}, {VerifyOn::host, "host"}}};
};

struct BenchOptions {
  CacheMode mode = CacheMode::cold;
  double warmup_s = 0.05;  // time-based warm-up per variant
  StoppingRule rule;
  bool blocking_kernel = true;   // keep host launch latency out of the timed window
  std::int64_t flush_bytes = 0;  // 0: twice the device's L2
  FlushMethod flush = FlushMethod::read;
  VerifyOn verify_on = VerifyOn::automatic;
  // Two variants sampled in pairs (a comparison): stop as soon as the verdict at this
  // threshold is decided (faster, slower or same) with at least min_samples pairs.
  bool paired = false;
  double verdict_threshold = 0.01;
  double graph_below_us = 10.0;    // hot mode: batch launches in a CUDA graph below this
  double graph_sample_us = 200.0;  // target length of one batched sample
  // Poison the outputs before a random ~10 % of the timed samples and compare them, and the
  // outputs after the last launch, with those of an untimed launch (output_verifier.hpp).
  bool verify_samples = true;
};

struct BenchJob {
  std::vector<RunJob> variants;  // 1, or 2 for an A/B comparison
  BenchOptions options;
};

// Timed launches checked against the variant's own output of an untimed launch after warm-up
// (output_verifier.hpp): a kernel that skips its work under timing fails as "inconsistent".
struct SampleVerification {
  bool enabled = false;  // verify_samples, and the variant has output tensors
  std::size_t poisoned_samples =
      0;                      // timed samples whose outputs were poisoned before, compared after
  bool last_checked = false;  // the outputs after the last timed launch were compared
  // Of the poisoned samples, those before which the inouts were set back to seed 1's values
  // and after which they were compared too (0 where the problem has no inout).
  std::size_t reset_samples = 0;
  std::int64_t failed_sample =
      -1;               // index into samples_s of the first sample that differed; -1: none
  std::string failure;  // why the variant is inconsistent; empty: consistent
  std::string note;     // how it was done where that differs (graph batches, large outputs)
  // The check inside the timing job (JobTensor::expected_path): the golden output against the
  // reference, the inputs against their checksums. A variant that fails it is not timed.
  bool reference_checked = false;
  std::string check_failure;
  // Secret-seed samples (JobTensor::secret_input_path): the timed samples that ran on a
  // secret seed's inputs and were compared with the reference's outputs for them.
  std::vector<std::int64_t> secret_samples;
  // Of the compared samples (the poisoned ones and the last launch), those whose outputs held
  // the golden launch's bytes by their keyed hash on the device: nothing was read back.
  std::size_t device_compared = 0;
  // Comparisons the device made and summed (DeviceComparer): the golden against the reference,
  // samples whose hash differed against the golden copy, secret samples against the
  // reference's outputs for their inputs.
  std::size_t compared_on_device = 0;
  // Bytes read back to the host to verify (outputs and inputs; 0 where the device compared
  // everything and the hashes checked the inputs).
  std::uint64_t read_back_bytes = 0;
  double verify_s = 0;  // spent comparing the poisoned samples' outputs (read back or hashed)
  bool failed() const { return !failure.empty(); }
};

struct SampleSeries {
  std::string label;
  std::vector<double> samples_s;  // one per timed launch (per launch, in graph mode)
  std::vector<bool> throttled;    // NVML reported a throttle reason after the sample
  int batch = 1;                  // launches per timed sample (graph mode: > 1)
  bool graph = false;
  double launch_overhead_us = 0;  // median host time of one cuLaunchKernel call
  bool host_in_window = false;    // no blocking kernel held it out (a solve() library)
  int blocking_timeouts = 0;      // samples where the blocking kernel gave up waiting
  // torch.compile baselines: graphs compiled while the series was sampled (a recompilation
  // inside the timing) and graph breaks of the compiled call; -1 where not a compiled call.
  int recompiles = -1;
  int graph_breaks = -1;
  double warmup_s = 0;
  double wall_s = 0;
  StopReason stop = StopReason::not_yet;
  SampleVerification verification;
};

struct BenchResult {
  RunStatus status = RunStatus::ok;
  std::string error;
  bool fatal = false;
  // The worker died of a limit of the machine's (a file-size or CPU-time limit): kopt's
  // environment, never the variants' verdict.
  bool environment = false;
  std::vector<SampleSeries> series;
  Clocks clocks_before;
  Clocks clocks_after;
  std::int64_t flush_bytes = 0;
  std::string
      flush_method;  // the one used: "read", or "write" when the flush kernel was unavailable,
                     // or "evict" (flush_bytes: the tensors' bytes) on a CPU device
  // How the job's Python candidates ran: "confined (...)" or "NOT confined: why"; empty when
  // it had none.
  std::string sandbox;
  bool ok() const { return status == RunStatus::ok; }
};

// What kopt ceilings measured on a device.
struct CeilingsResult {
  RunStatus status = RunStatus::ok;
  std::string error;
  std::vector<Ceiling> ceilings;
  Clocks clocks_before;
  Clocks clocks_after;
};

nlohmann::json to_json(const BenchOptions& o);
BenchOptions bench_options_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SampleVerification& v);
SampleVerification sample_verification_from_json(const nlohmann::json& j);
nlohmann::json to_json(const SampleSeries& s);
SampleSeries sample_series_from_json(const nlohmann::json& j);
nlohmann::json to_json(const BenchResult& r);
BenchResult bench_result_from_json(const nlohmann::json& j);
nlohmann::json to_json(const CeilingsResult& r);
CeilingsResult ceilings_result_from_json(const nlohmann::json& j);

}  // namespace kopt
