#pragma once
// `kopt import kernelbench DIR`: every KernelBench file of a folder imported (in parallel
// Python processes), then, when asked, each problem's reference run once and its PyTorch
// baselines (eager, torch.compile) timed, one problem after another on one worker. The
// outcome of each problem is kept in OUT/kernelbench.json, rewritten atomically after each
// step, so that a batch killed at any moment resumes where it stopped.
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/rigour.hpp"
#include "kopt/measure/variant_status.hpp"

namespace kopt::campaign {

// What became of one KernelBench file's import.
enum class ImportStatus { pending, imported, kept, refused, failed };
// Whether the problem's reference ran.
enum class ReferenceStatus { not_run, ok, failed };
// What became of a problem's candidate (--candidates: a ModelNew file of the problem's name).
enum class CandidateVerdict { none, not_run, passed, failed };

}  // namespace kopt::campaign

namespace kopt {
template <>
struct EnumNames<campaign::ImportStatus> {
  static constexpr std::array<std::pair<campaign::ImportStatus, std::string_view>, 5> table{{
      {campaign::ImportStatus::pending, "pending"},
      {campaign::ImportStatus::imported, "imported"},
      {campaign::ImportStatus::kept, "kept"},        // an earlier import
      {campaign::ImportStatus::refused, "refused"},  // bad input
      {campaign::ImportStatus::failed, "failed"},
  }};
};
template <>
struct EnumNames<campaign::ReferenceStatus> {
  static constexpr std::array<std::pair<campaign::ReferenceStatus, std::string_view>, 3> table{{
      {campaign::ReferenceStatus::not_run, "not_run"},
      {campaign::ReferenceStatus::ok, "ok"},
      {campaign::ReferenceStatus::failed, "failed"},
  }};
};
template <>
struct EnumNames<campaign::CandidateVerdict> {
  static constexpr std::array<std::pair<campaign::CandidateVerdict, std::string_view>, 4> table{{
      {campaign::CandidateVerdict::none, "none"},  // no candidate file for the problem
      {campaign::CandidateVerdict::not_run, "not_run"},
      // checked (every seed, the secret and the wide seed, the other shapes) and timed on
      // verified samples
      {campaign::CandidateVerdict::passed, "passed"},
      {campaign::CandidateVerdict::failed, "failed"},  // the check or the timing refused it
  }};
};
}  // namespace kopt

namespace kopt::campaign {

// One timed variant of a problem: a PyTorch baseline, or its candidate.
struct TimedOutcome {
  VariantStatus status = VariantStatus::not_run;  // ok, a failure, unavailable or not_run
  std::string label;                              // what was timed
  double median_s = 0;
  double rel_noise = 0;
  std::size_t n = 0;
  std::vector<std::string> flags;  // "noisy: ..." and the like, with the reason where known
  std::string error;
};

// A problem's GPU memory while its reference ran and its baselines were timed: the device's
// memory in use (every process, as nvidia-smi shows it) at its peak, less what was in use
// when the problem started, against the bound of what it must hold: its tensors (inputs,
// parameters, outputs) once, what its computation needs beside them (its intermediates and
// results, as torch's allocator counted them in the largest of its reference's call and its
// baselines' calls; where not measured, its outputs once more), and 10 %. kopt's Python
// process says what held the memory: torch's allocator's peak by kind of request.
struct GpuMemoryUse {
  std::optional<std::uint64_t> idle_bytes, peak_bytes;  // nullopt: not read (note says why)
  std::uint64_t bound_bytes = 0;
  std::uint64_t tensor_bytes = 0;  // kopt's tensors of the problem
  // What each kind of call of the problem's computation ("python_reference", "torch_eager",
  // "torch_compile") allocated at most beside kopt's tensors; empty: not read.
  std::map<std::string, std::uint64_t> work_bytes;
  // The most kopt's Python process reserved (torch's allocator, its cached blocks included)
  // by kind of request: "run python_reference", "sample torch_compile", ...
  std::map<std::string, std::uint64_t> process_reserved;
  // The most its live tensors took at once, by the same kinds: less than reserved by what the
  // allocator kept cached.
  std::map<std::string, std::uint64_t> process_allocated;
  // What kopt's trusted Python process had reserved and allocated when the problem started
  // (its flush buffer, the CUDA libraries' workspaces: memory held for the process's life), so
  // that the growth of torch's allocator in the problem is told from memory outside it, and
  // its live tensors from its cached blocks; nullopt: not read.
  std::optional<std::uint64_t> process_start_reserved, process_start_allocated;
  std::string note;
  std::optional<std::uint64_t> used_bytes() const {
    if (!idle_bytes || !peak_bytes) return std::nullopt;
    return *peak_bytes > *idle_bytes ? *peak_bytes - *idle_bytes : 0;
  }
  // The bound from tensor_bytes, work_bytes and the outputs' bytes.
  void set_bound(std::uint64_t output_bytes);
  // The kind of request whose reserved peak was largest, and that peak ("", 0: none read).
  std::pair<std::string, std::uint64_t> largest_phase() const;
  // How far torch's allocator grew in the problem: the largest reserved (or allocated) peak
  // less what was reserved (allocated) at its start; nullopt where the start was not read.
  std::optional<std::uint64_t> reserved_growth() const;
  std::optional<std::uint64_t> allocated_growth() const;
};

// A problem's candidate: a KernelBench ModelNew, checked as `kopt check` checks a kernel and
// timed as `kopt bench` times one, beside the problem's baselines.
struct CandidateOutcome {
  std::string file;  // its file under --candidates ("" none)
  std::string hash;  // its content's SHA-256 when it was evaluated: another content is run again
  CandidateVerdict verdict = CandidateVerdict::none;
  evaluate::KernelStatus check = evaluate::KernelStatus::not_run;
  TimedOutcome timing;  // its flags are the series' (bimodal, secret_slow, ...)
  std::string cause;    // why it failed, in the check's or the timing's words
  double check_s = 0, bench_s = 0;
};

struct KernelbenchEntry {
  std::string file;     // the KernelBench file's name
  std::string problem;  // its stem: the problem's name and directory under OUT
  ImportStatus status = ImportStatus::pending;
  std::string error;
  double import_s = 0;
  // Of import_s, the import process's start where this file was its first (Python, torch's
  // import, the GPU's context): what a harness of one process pays once, before any problem.
  double import_start_s = 0;
  bool flops_known = false;
  std::vector<std::string> notes;
  ReferenceStatus reference = ReferenceStatus::not_run;
  std::string reference_error;
  double reference_s = 0;  // the check's wall time: inputs, the reference's run, its outputs
  // The reference's outputs as the device summarized them (they are not written).
  std::map<std::string, OutputSummary> reference_outputs;
  GpuMemoryUse memory;
  // the wall time of timing both baselines, torch.compile's compile included
  double baselines_s = 0;
  TimedOutcome eager, compiled;
  CandidateOutcome candidate;
  std::string device;  // where its reference and baselines ran ("" until they did)
};

struct KernelbenchBatchOptions {
  std::filesystem::path source;  // a folder of KernelBench files
  std::filesystem::path out;     // one problem directory per file under it
  std::filesystem::path cache_root;
  int jobs = 0;            // parallel imports; 0: the machine's cores
  bool force = false;      // import again and evaluate again what an earlier batch did
  bool check = false;      // run each reference once
  bool baselines = false;  // time torch eager and torch.compile
  // A folder of ModelNew files named as the KernelBench files (NAME.py): each is checked and
  // timed against its problem (needs check). Empty: none.
  std::filesystem::path candidates;
  evaluate::Rigour rigour = evaluate::Rigour::report();  // the baselines' timing
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // Called before the imports start where the device has work ahead (--check or --vs-torch,
  // and a problem to import or to evaluate), and once every import has ended, before the first
  // evaluation.
  std::function<void()> before_imports = [] {};
  std::function<void()> after_imports = [] {};
  // The device's memory in use (every process), read while each problem is evaluated; unset
  // or nullopt where it cannot be read (memory_note says why).
  std::function<std::optional<std::uint64_t>()> memory_used;
  std::string memory_note = "no reading of the device's memory for this backend";
};

struct KernelbenchBatch {
  std::vector<KernelbenchEntry> entries;
  std::string device;  // where references and baselines ran
  double wall_s = 0;
  int exit_code() const;  // 0 all imported (and evaluated), 1 any refused or failed, or a
                          // candidate failed
};

// The KernelBench files of a folder (*.py), in KernelBench's numeric order (2 before 10).
std::vector<std::filesystem::path> kernelbench_files(const std::filesystem::path& folder);

// What an import gives the batch: the problem's notes, and of its wall time the import
// process's own start (Python, torch, the GPU's context), which its first file waits for.
struct KernelbenchImported {
  KernelbenchImported(std::vector<std::string> n = {},
                      double start_s = 0)  // NOLINT: a list converts
      : notes(std::move(n)), process_start_s(start_s) {}
  std::vector<std::string> notes;
  double process_start_s = 0;
};

// Imports one file into its directory; the default is import_kernelbench. Tests pass fakes.
using KernelbenchImporter = std::function<Expected<KernelbenchImported>(
    const std::filesystem::path& file, const std::filesystem::path& dir)>;
// Runs the reference and the baselines of one imported problem; the default uses a worker. A
// failure of the machine (kopt's own memory, a full disk, a lost worker) is its Error, never
// the problem's verdict: the entry keeps what was not run, and a resume runs it again.
using KernelbenchEvaluator =
    std::function<Expected<void>(KernelbenchEntry& entry, const std::filesystem::path& dir)>;

// The whole batch. An environment error (no Python with torch, kopt out of memory) ends it as
// an Error, its state saved; a problem that is refused or fails is an entry with its reason,
// and the batch goes on.
Expected<KernelbenchBatch> run_kernelbench_batch(const KernelbenchBatchOptions& options,
                                                 const KernelbenchImporter& importer,
                                                 const KernelbenchEvaluator& evaluate);
// The same over several devices, an evaluator each (--gpus): each device evaluates one
// problem at a time, taking the next when it is done, so that no two timings share a device.
Expected<KernelbenchBatch> run_kernelbench_batch(const KernelbenchBatchOptions& options,
                                                 const KernelbenchImporter& importer,
                                                 const std::vector<KernelbenchEvaluator>& devices);

// The evaluator over a real worker: `kopt check` of the reference (one seed, its outputs in a
// scratch cache, since KernelBench's outputs reach GBs) and `kopt bench --vs-torch`.
KernelbenchEvaluator worker_evaluator(const KernelbenchBatchOptions& options,
                                      evaluate::CheckContext ctx);

nlohmann::json to_json(const KernelbenchEntry& e);
KernelbenchEntry kernelbench_entry_from_json(const nlohmann::json& j);
nlohmann::json to_json(const KernelbenchBatch& b);
// The table of docs/kernelbench.md: a row per problem.
std::string kernelbench_markdown(const KernelbenchBatch& b);

}  // namespace kopt::campaign
