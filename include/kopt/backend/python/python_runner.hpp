#pragma once
// The Python side of a worker (docs/architecture.md §2, backend/python): PyTorch references
// (ref.py), Triton kernels and the PyTorch baselines run in a Python child that kopt's worker
// starts on first use. Inputs cross as recipes the child draws on its own device (tensor_draw.hpp),
// outputs as raw files; timing stays here: the child takes one sample when asked, and the shared A
// B B A schedule and stopping rules decide (sampling_rounds).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/python/candidate_room.hpp"
#include "kopt/core/embedded_file.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

// A script compiled into kopt, written (once per content) into the cache as NAME-HASH/NAME.py
// (embedded_python_files of the one file).
std::filesystem::path embedded_python_script(const std::filesystem::path& cache_root,
                                             const std::string& name, const char* text);
// Files compiled into kopt, side by side (a script and its modules), written once per content
// into the cache as the folder NAME-HASH; returns its script NAME.py.
std::filesystem::path embedded_python_files(const std::filesystem::path& cache_root,
                                            const std::string& name, const EmbeddedFile* files);
// The worker script and its parts, compiled into kopt, written (once per content) into the cache.
std::filesystem::path python_worker_script(const std::filesystem::path& cache_root);
// $KOPT_PYTHON, else the first of python3, /usr/bin/python3 and python that has torch.
std::string python_executable();

// Empty when a Python job that reports GPU `reported` ran on `expected` (UUIDs with or
// without "GPU-", any case; either empty: nothing to compare), else why its numbers are another
// device's.
// Where the Python worker finds a tensor to compare (OutputSource): {key, name} of one it kept,
// or {path}.
nlohmann::json python_source_json(const OutputSource& s, const std::string& name);

std::string python_device_mismatch(const std::string& expected, const std::string& reported);

class PythonRunner {
 public:
  // The child's stderr goes to `log_path`, or is this process's own when it is empty.
  explicit PythonRunner(std::filesystem::path log_path = {}) : m_log(std::move(log_path)) {}
  ~PythonRunner();
  PythonRunner(const PythonRunner&) = delete;
  PythonRunner& operator=(const PythonRunner&) = delete;

  // Bytes rewritten before each cold sample when a job does not say (twice the L2).
  void set_default_flush_bytes(std::int64_t b) { m_default_flush = b; }
  // The GPU the Python processes run on, by its UUID (DeviceInfo::uuid): they see that device
  // alone (CUDA_VISIBLE_DEVICES), the one kopt's worker times its CUDA kernels on, and a job
  // run on another device is refused. Before the first call; empty: the default device.
  void set_device(std::string uuid) { m_device_uuid = std::move(uuid); }

  // `nvtx_range`: the call runs inside that NVTX push/pop range of the Python thread (for ncu
  // --nvtx: tools/ncu.hpp); empty, none.
  RunResult run(const RunJob& job, const std::string& nvtx_range = {});
  // Starts the trusted process ahead of its first job (its device's context made; with
  // `compile`, torch.compile tried once); why it could not, or "".
  std::string warm(bool compile);
  BenchResult bench(const BenchJob& job);
  // The device memory of each running Python process ("trusted", "candidate") as torch's
  // allocator counts it: peaks by kind of request since the last call, what it holds now and a
  // reference's largest working memory beside kopt's tensors (the worker's op "memory"). With
  // `reset` each gives its cached blocks back and counts from here. A process not running is
  // left out; one that cannot answer says why ("error").
  nlohmann::json memory(bool reset);
  // A CUDA kernel's outputs compared by the trusted process with the reference's it keeps
  // (the executor's KeptComparer, executor.hpp): `outputs` by name, {handle, offset} of the
  // executor's device memory or {path} of its file. Fills result.compared; its failure is kopt's
  // environment. False where the trusted process could not open the memory shared.
  // Here and in run(), a comparison that failed because the trusted process was lost (it died:
  // killed, or out of memory; what it kept went with it) keeps the references it needs again
  // (kept_references.cpp) and is made once more; lost again, it is the job's own doing where
  // the job's code ran in kopt's reach (a Python candidate, a solve() library's host code).
  bool compare_kept(const RunJob& job, const nlohmann::json& outputs, RunResult& result);

 private:
  struct Reply {
    bool ok = false;
    nlohmann::json result;
    std::string error;  // the exception and the tail of its traceback, or how the child died
    // The worker refused a candidate that rewrote something kopt measures with (that worker
    // exits: it is never reused).
    bool tampered = false;
    // kopt's own tensors did not fit on the device: its environment, not the candidate.
    bool environment = false;
  };
  // Candidates (Triton kernels: code that is not kopt's nor the problem's) run in a process of
  // their own, so that references and PyTorch baselines are never run nor timed where a
  // candidate's code has been loaded. `candidate` picks the process.
  Reply call(const nlohmann::json& request, std::chrono::milliseconds timeout, bool candidate);
  // Starts the candidates' process in a new room, confined, and tries it (the worker's
  // "selftest"); empty, or why no process could be started.
  std::string start_candidate();
  // One request and its reply, with a child that is running.
  Reply exchange(Subprocess& child, const nlohmann::json& request,
                 std::chrono::milliseconds timeout);
  nlohmann::json job_json(const RunJob& job, const std::filesystem::path& after_dir) const;
  // A candidate's outputs (RunJob::compare) compared by the trusted process, on its device,
  // with the reference's kept there or in files (device_compare.cpp): `run` is the candidate's
  // reply, with the handles of the outputs it shared or, where it could not, its files. Fills
  // result.compared; a candidate that handed over something else fails.
  void compare_outputs(const RunJob& job, const nlohmann::json& run,
                       const std::filesystem::path& after_dir, RunResult& result);
  // run() and compare_kept() once, without what kept_references.cpp adds.
  RunResult run_once(const RunJob& job, const std::string& nvtx_range);
  bool compare_kept_once(const RunJob& job, const nlohmann::json& outputs, RunResult& result);
  // The trusted process as a job found it: how many times it had been started.
  struct TrustedMark {
    int starts = 0;
  };
  TrustedMark trusted_mark() const { return {m_trusted_starts}; }
  // Whether it was lost since `mark`: it died, or was started again.
  bool trusted_lost_since(TrustedMark mark) const {
    return m_trusted_starts != mark.starts || !m_trusted.running();
  }
  // A reference job whose outputs the trusted process kept, remembered by its key (the last
  // k_kept_remembered).
  void remember_kept(const RunJob& job);
  // `result` of `job`, which started at `mark`: where it failed as kopt's environment because
  // the trusted process was lost, the references its comparison needs kept again and `again`
  // run; lost once more, the job's own failure where its code ran in kopt's reach.
  RunResult after_trusted_lost(const RunJob& job, TrustedMark mark, RunResult result,
                               const std::function<RunResult()>& again);
  // kopt's own clock against the worker's events over back-to-back calls of prepared variant
  // `id` whose median sample is `median_s`: empty when they agree or cannot be compared.
  std::string cross_check_clock(int id, double median_s, double host_s);

  // The spawn options of a Python process: `base`, on the device set_device chose.
  SpawnOptions on_device(SpawnOptions base) const;
  // Empty, or why reply `r`'s job ran on another GPU than set_device's.
  std::string wrong_device(const Reply& r) const;

  std::filesystem::path m_log;
  std::string m_device_uuid;
  Subprocess m_trusted, m_candidate;
  // The candidates' process's directory and sandbox: a new one with each process.
  std::unique_ptr<CandidateRoom> m_room;
  // How the candidates' process runs: "confined (...)", or "NOT confined: why".
  std::string m_sandbox;
  std::int64_t m_default_flush = 100 << 20;
  int m_trusted_starts = 0;
  std::vector<RunJob> m_keeps;  // remember_kept's, oldest first
  static constexpr std::size_t k_kept_remembered = 64;
};

// Whether jobs of kind `k` run in the candidates' process (code under test, confined): Triton
// kernels and the ModelNew modules that run as them; the references and PyTorch baselines run
// in the trusted one.
bool is_candidate(ModuleKind k);

// Whether a call's timed window (`window_s`, the median sample) saw its work: the device staying
// busy `late_s` after it (the median) beyond 20 us and a tenth of the window is work no timer
// saw. Empty when it did, else why not.
std::string late_work(double window_s, double late_s);

// Whether the seconds a worker's events reported for one call (`reported_s`) can be what
// kopt's own clock saw: `per_call_s` per call over back-to-back calls, of which the host spent
// `host_call_s` making each. Only a device-bound call (host under half of it) can be judged;
// a report under 0.8 of kopt's clock is refused. Empty when they agree, else why not.
std::string host_clock_disagreement(double reported_s, double per_call_s, double host_call_s);

}  // namespace kopt
