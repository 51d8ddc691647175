#include "kopt/campaign/kernelbench_batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "kernelbench_cells.hpp"
#include "kopt/backend/python/kernelbench_import.hpp"
#include "kopt/campaign/baseline_notes.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/peak_watch.hpp"
#include "kopt/evaluate/bench.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/problem/kernelbench.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// KernelBench names its files "<number>_<Name>.py": sorted by that number, then by name.
long leading_number(const std::string& name) {
  std::size_t digits = 0;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
  return digits == 0 || digits > 9 ? -1 : std::stol(name.substr(0, digits));
}

// The problem directory holds an import in this kopt's format (its ref.py and its ModelNew
// adapter are what this kopt writes): an earlier kopt's is imported again.
bool import_current(const fs::path& dir) {
  auto toml = read_text_file(dir / "kopt.toml");
  return toml && kernelbench_import_current(*toml);
}

// Imported by an earlier batch, its problem directory still there, and not forced again.
// A candidate to evaluate needs the import's ModelNew adapter, which older imports lack.
bool import_kept(const KernelbenchEntry& e, const KernelbenchBatchOptions& o) {
  fs::path dir = o.out / e.problem;
  return kernelbench_imported(e) && !o.force && import_current(dir) &&
         (!candidate_due(e, o) || fs::exists(dir / k_model_new_adapter_file));
}

bool needs_evaluation(const KernelbenchEntry& e, const KernelbenchBatchOptions& o) {
  if (!kernelbench_imported(e)) return false;
  return (o.check && e.reference == ReferenceStatus::not_run) ||
         (o.baselines && e.eager.status == VariantStatus::not_run) || candidate_due(e, o);
}

// The state of a batch, shared by the import threads; saved after every step.
class BatchState {
 public:
  explicit BatchState(fs::path file) : m_file(std::move(file)) {}

  std::vector<KernelbenchEntry> load() const {
    std::vector<KernelbenchEntry> out;
    auto text = read_text_file(m_file);
    if (!text) return out;
    try {
      json state = json::parse(*text);  // named: a range over a temporary's member would dangle
      for (const auto& e : state.at("problems")) out.push_back(kernelbench_entry_from_json(e));
    } catch (const std::exception&) {
      // An unreadable state is started afresh: the problem directories stay as they are.
    }
    return out;
  }

  void save(const KernelbenchBatch& b) {
    std::lock_guard lock(m_mutex);
    (void)write_text_atomic(m_file, to_json(b).dump(1) + "\n");
  }

  std::mutex& mutex() { return m_mutex; }

 private:
  fs::path m_file;
  std::mutex m_mutex;
};

// Imports share the GPU: each holds `alone` shared, and one the GPU had no room for (beside
// the others) is tried again holding it alone. Only then is running out of memory its own.
void import_one(KernelbenchEntry& e, const fs::path& file, const fs::path& dir,
                const KernelbenchBatchOptions& o, const KernelbenchImporter& importer,
                std::shared_mutex& alone, std::optional<Error>& environment) {
  auto t0 = Clock::now();
  e.error.clear();
  e.import_start_s = 0;
  if (!o.force && import_current(dir)) {
    e.status = ImportStatus::kept;
  } else {
    auto notes = [&] {
      std::shared_lock shared(alone);
      return importer(file, dir);
    }();
    if (!notes && import_ran_out_of_memory(notes.error())) {
      o.log("import " + file.filename().string() +
            ": the GPU had no room for it beside the other imports; again, alone");
      std::unique_lock exclusive(alone);
      notes = importer(file, dir);
    }
    e.import_s = seconds_since(t0);
    if (!notes) {
      const Error& err = notes.error();
      e.status = err.kind == ErrorKind::bad_input ? ImportStatus::refused : ImportStatus::failed;
      e.error = err.message;
      if (err.kind == ErrorKind::environment) environment = err;
      return;
    }
    e.status = ImportStatus::imported;
    e.notes = notes->notes;
    e.import_start_s = notes->process_start_s;
    e.reference = ReferenceStatus::not_run;
    e.eager = e.compiled = TimedOutcome{};
    // A candidate refused against an earlier import may have been refused by it (an adapter
    // that kept stale weights did that): evaluated again. One that passed stays passed.
    if (e.candidate.verdict == CandidateVerdict::failed)
      e.candidate.verdict = CandidateVerdict::not_run;
  }
  if (auto p = load_problem(dir)) e.flops_known = p->cost_at_dims().flops.has_value();
}

// The order the problems are evaluated in: the smallest first (by the bytes of their tensors,
// as imported), so that a batch cut off by its time limit has done the most problems, and the
// few of GBs, which take minutes, come last; problems of one size keep the files' order. A
// problem whose import cannot be read counts as empty: its evaluation says why at once.
std::vector<std::size_t> evaluation_order(const KernelbenchBatch& batch, const fs::path& out) {
  std::vector<std::uintmax_t> bytes(batch.entries.size(), 0);
  for (std::size_t i = 0; i < batch.entries.size(); ++i)
    if (kernelbench_imported(batch.entries[i]))
      if (auto p = load_problem(out / batch.entries[i].problem))
        bytes[i] = problem_tensor_bytes(*p);
  std::vector<std::size_t> order(batch.entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bytes[a] < bytes[b]; });
  return order;
}

// Each device takes the next problem to evaluate when its last is done. A failure of the
// machine stops every device after its current problem and leaves the problem not run (its
// entry as it was), for a resume.
Expected<void> evaluate_all(KernelbenchBatch& batch, const KernelbenchBatchOptions& o,
                            BatchState& state, const std::vector<KernelbenchEvaluator>& devices,
                            Clock::time_point t0) {
  const std::vector<std::size_t> order = evaluation_order(batch, o.out);
  std::atomic<std::size_t> next{0};
  std::optional<Error> environment;
  auto work = [&](std::size_t device) {
    for (std::size_t n; (n = next++) < order.size();) {
      const std::size_t i = order[n];
      KernelbenchEntry e;
      {
        std::lock_guard lock(state.mutex());
        if (environment) return;
        e = batch.entries[i];
      }
      if (!needs_evaluation(e, o) && !(o.force && kernelbench_imported(e))) continue;
      auto done = devices[device](e, o.out / e.problem);
      {
        std::lock_guard lock(state.mutex());
        if (!done) {
          if (!environment) environment = done.error();
          return;
        }
        batch.entries[i] = e;
      }
      o.log(fmt::format(
          "[{:.0f} s] {}{}: reference {} ({:.1f} s), eager {}, torch.compile {} ({:.1f} s), GPU "
          "memory {}{}",
          seconds_since(t0), e.problem,
          devices.size() > 1 ? fmt::format(" (device {})", device) : std::string(), e.reference,
          e.reference_s, time_cell(e.eager), time_cell(e.compiled), e.baselines_s, memory_cell(e),
          e.candidate.verdict == CandidateVerdict::none
              ? std::string()
              : fmt::format(", candidate {} ({:.1f} + {:.1f} s){}", candidate_cell(e.candidate),
                            e.candidate.check_s, e.candidate.bench_s,
                            e.candidate.cause.empty() ? "" : ": " + e.candidate.cause)));
      state.save(batch);
    }
  };
  if (devices.size() == 1) {
    work(0);
  } else {
    std::vector<std::jthread> pool;
    for (std::size_t d = 0; d < devices.size(); ++d) pool.emplace_back(work, d);
  }
  if (environment) return Unexpected(*environment);
  return {};
}

}  // namespace

int KernelbenchBatch::exit_code() const {
  for (const auto& e : entries) {
    if (!kernelbench_imported(e) || e.reference == ReferenceStatus::failed) return 1;
    for (const auto* b : {&e.eager, &e.compiled})
      if (b->status == VariantStatus::run_failed) return 1;
    if (e.candidate.verdict == CandidateVerdict::failed) return 1;
  }
  return 0;
}

std::vector<fs::path> kernelbench_files(const fs::path& folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".py") files.push_back(entry.path());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    std::string na = a.filename().string(), nb = b.filename().string();
    long ia = leading_number(na), ib = leading_number(nb);
    return ia != ib ? ia < ib : na < nb;
  });
  return files;
}

Expected<KernelbenchBatch> run_kernelbench_batch(const KernelbenchBatchOptions& o,
                                                 const KernelbenchImporter& importer,
                                                 const KernelbenchEvaluator& evaluate) {
  return run_kernelbench_batch(o, importer, std::vector<KernelbenchEvaluator>{evaluate});
}

Expected<KernelbenchBatch> run_kernelbench_batch(const KernelbenchBatchOptions& o,
                                                 const KernelbenchImporter& importer,
                                                 const std::vector<KernelbenchEvaluator>& devices) {
  auto t0 = Clock::now();
  if (!fs::is_directory(o.source)) return Unexpected(bad_input("not a folder", o.source.string()));
  auto files = kernelbench_files(o.source);
  if (files.empty())
    return Unexpected(bad_input("holds no KernelBench files (*.py)", o.source.string()));
  std::error_code ec;
  fs::create_directories(o.out, ec);
  BatchState state(o.out / "kernelbench.json");
  KernelbenchBatch batch;
  std::vector<KernelbenchEntry> earlier = o.force ? std::vector<KernelbenchEntry>{} : state.load();
  for (const auto& f : files) {
    KernelbenchEntry e;
    e.file = f.filename().string();
    e.problem = f.stem().string();
    auto before =
        std::find_if(earlier.begin(), earlier.end(), [&](auto& x) { return x.file == e.file; });
    batch.entries.push_back(before != earlier.end() ? *before : e);
    mark_candidate(batch.entries.back(), o.candidates);
  }

  // Work for the device ahead (a file never imported, a problem not evaluated): its set-up
  // starts beside the imports. A file refused before is tried again without it.
  if ((o.check || o.baselines) &&
      std::any_of(batch.entries.begin(), batch.entries.end(), [&](const KernelbenchEntry& e) {
        return o.force || e.status == ImportStatus::pending || needs_evaluation(e, o) ||
               (kernelbench_imported(e) && !import_kept(e, o));
      }))
    o.before_imports();

  // Imports in parallel, in Python processes kept for file after file (the importer's).
  std::atomic<std::size_t> next{0};
  std::shared_mutex alone;
  std::optional<Error> environment;
  std::mutex env_mutex;
  unsigned jobs = o.jobs > 0 ? static_cast<unsigned>(o.jobs)
                             : std::max(1u, std::thread::hardware_concurrency());
  auto work = [&] {
    for (std::size_t i; (i = next++) < files.size();) {
      {
        std::lock_guard lock(env_mutex);
        if (environment) return;
      }
      KernelbenchEntry e;
      {
        std::lock_guard lock(state.mutex());
        e = batch.entries[i];
      }
      if (import_kept(e, o)) continue;
      std::optional<Error> env;
      import_one(e, files[i], o.out / e.problem, o, importer, alone, env);
      o.log(fmt::format("[{:.0f} s] import {}: {} ({} s){}", seconds_since(t0), e.file,
                        name_of(e.status), import_cell(e), e.error.empty() ? "" : ": " + e.error));
      if (env) {
        std::lock_guard lock(env_mutex);
        environment = env;
      }
      {
        std::lock_guard lock(state.mutex());
        batch.entries[i] = e;
      }
      state.save(batch);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<std::size_t>(jobs, files.size()); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  o.after_imports();
  if (environment) return Unexpected(*environment);

  // References and baselines, one problem at a time on each device: timings share no GPU.
  if (o.check || o.baselines)
    if (auto done = evaluate_all(batch, o, state, devices, t0); !done)
      return Unexpected(done.error());
  batch.wall_s = seconds_since(t0);
  state.save(batch);
  return batch;
}

KernelbenchEvaluator worker_evaluator(const KernelbenchBatchOptions& o,
                                      evaluate::CheckContext ctx) {
  return [o, ctx](KernelbenchEntry& e, const fs::path& dir) mutable -> Expected<void> {
    auto problem = load_problem(dir);
    if (!problem) {
      e.reference = ReferenceStatus::failed;
      e.reference_error = problem.error().to_string();
      return {};
    }
    problem->kernels.clear();  // the reference and the baselines, not kernels someone added
    // What this call runs: what has not run (a resume, or a candidate added later).
    bool check = o.check && e.reference == ReferenceStatus::not_run;
    bool baselines = o.baselines && e.eager.status == VariantStatus::not_run;
    if (!check && !baselines) {
      if (candidate_due(e, o)) return evaluate_candidate(e, dir, o, ctx);
      return {};
    }
    e.memory = GpuMemoryUse{};
    e.memory.tensor_bytes = problem_tensor_bytes(*problem);
    const std::uint64_t output_bytes = problem_tensor_bytes(*problem, Role::output);
    e.memory.set_bound(output_bytes);
    // kopt's Python process counts this problem's peaks from here, its cached blocks given back.
    (void)ctx.worker.python_memory(true);
    std::optional<PeakWatch> watch;
    if (o.memory_used) e.memory.idle_bytes = o.memory_used();
    if (e.memory.idle_bytes)
      watch.emplace(o.memory_used, std::chrono::milliseconds(20));
    else
      e.memory.note = o.memory_note;
    auto read_peak = [&] {
      if (watch) e.memory.peak_bytes = watch->stop();
      if (auto held = ctx.worker.python_memory(false)) read_process_memory(e.memory, *held);
      e.memory.set_bound(output_bytes);
    };
    if (check) {
      auto t0 = Clock::now();
      // KernelBench's reference outputs reach GBs: not kept, and in RAM where there is room.
      TempDir scratch("kopt-kernelbench", problem_tensor_bytes(*problem));
      evaluate::CheckOptions co;
      co.seeds = 1;
      co.cache_root = scratch.path();
      co.keep_reference_outputs = false;  // nothing of the batch compares them
      auto report = evaluate::run_check(*problem, co, ctx);
      if (!report && report.error().kind == ErrorKind::environment)
        return Unexpected(report.error());  // not the problem's doing: not recorded
      e.reference_outputs.clear();
      if (report && !report->reference_outputs.empty())
        e.reference_outputs = report->reference_outputs.begin()->second;
      e.reference_s = seconds_since(t0);
      e.reference = report && report->device ? ReferenceStatus::ok : ReferenceStatus::failed;
      e.reference_error = !report          ? report.error().message
                          : report->device ? ""
                                           : report->device_error;
      if (!baselines) read_peak();
    }
    if (baselines) {
      auto t0 = Clock::now();
      evaluate::EvaluatorOptions eo;
      eo.cache_root = o.cache_root;
      evaluate::Evaluator ev(*problem, {ctx}, eo);
      evaluate::Rigour r = o.rigour;
      r.check = false;
      auto report = ev.with_baselines({}, r);
      e.baselines_s = seconds_since(t0);
      read_peak();
      if (!report && report.error().kind == ErrorKind::environment)
        return Unexpected(report.error());
      if (!report) {
        e.eager.status = e.compiled.status = VariantStatus::run_failed;
        e.eager.error = e.compiled.error = report.error().message;
        return {};
      }
      for (const auto& v : report->variants) {
        TimedOutcome& b = v.kernel.rfind("torch.compile", 0) == 0 ? e.compiled : e.eager;
        b = TimedOutcome{};
        b.label = v.kernel;
        b.status = v.status;
        b.error = v.error.substr(0, 2000);
        b.median_s = v.summary.median;
        b.rel_noise = v.summary.rel_noise;
        b.n = v.summary.n;
        if (v.summary.n > 0)
          b.flags = torch_baseline_flags(v.series, v.summary, v.throttled_samples);
      }
    }
    // The candidate after the problem's own numbers, so that its memory is not theirs.
    if (candidate_due(e, o)) return evaluate_candidate(e, dir, o, ctx);
    return {};
  };
}

}  // namespace kopt::campaign
