#include "kopt/campaign/kernelbench_batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <thread>

#include "kopt/campaign/baseline_notes.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/bench.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/problem/tensor_data.hpp"
#include "table_cell.hpp"

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

bool imported(const KernelbenchEntry& e) {
  return e.status == ImportStatus::imported || e.status == ImportStatus::kept;
}

bool needs_evaluation(const KernelbenchEntry& e, const KernelbenchBatchOptions& o) {
  if (!imported(e)) return false;
  return (o.check && e.reference == ReferenceStatus::not_run) ||
         (o.baselines && e.eager.status == VariantStatus::not_run);
}

json to_json(const BaselineOutcome& b) {
  return {{"status", b.status},       {"label", b.label}, {"median_s", b.median_s},
          {"rel_noise", b.rel_noise}, {"n", b.n},         {"flags", b.flags},
          {"error", b.error}};
}

BaselineOutcome baseline_from_json(const json& j) {
  BaselineOutcome b;
  b.status = j.value("status", b.status);
  b.label = j.value("label", std::string{});
  b.median_s = j.value("median_s", 0.0);
  b.rel_noise = j.value("rel_noise", 0.0);
  b.n = j.value("n", std::size_t{0});
  b.flags = j.value("flags", std::vector<std::string>{});
  b.error = j.value("error", std::string{});
  return b;
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

void import_one(KernelbenchEntry& e, const fs::path& file, const fs::path& dir,
                const KernelbenchBatchOptions& o, const KernelbenchImporter& importer,
                std::optional<Error>& environment) {
  auto t0 = Clock::now();
  e.error.clear();
  if (!o.force && fs::exists(dir / "kopt.toml")) {
    e.status = ImportStatus::kept;
  } else {
    auto notes = importer(file, dir);
    e.import_s = seconds_since(t0);
    if (!notes) {
      const Error& err = notes.error();
      e.status = err.kind == ErrorKind::bad_input ? ImportStatus::refused : ImportStatus::failed;
      e.error = err.message;
      if (err.kind == ErrorKind::environment) environment = err;
      return;
    }
    e.status = ImportStatus::imported;
    e.notes = *notes;
    e.reference = ReferenceStatus::not_run;
    e.eager = e.compiled = BaselineOutcome{};
  }
  if (auto p = load_problem(dir)) e.flops_known = p->cost_at_dims().flops.has_value();
}

std::string time_cell(const BaselineOutcome& b) {
  if (b.status == VariantStatus::not_run) return "-";
  if (b.status != VariantStatus::ok) return std::string(name_of(b.status));
  double us = b.median_s * 1e6;
  std::string t = us >= 1000 ? fmt::format("{:.2f} ms", us / 1000) : fmt::format("{:.1f} us", us);
  return t;
}

std::string noise_cell(const BaselineOutcome& b) {
  if (b.status != VariantStatus::ok) return "-";
  return fmt::format("{:.1f} %{}", 100 * b.rel_noise, b.flags.empty() ? "" : " (flagged)");
}

std::string cell(std::string s) {
  return table_cell(std::move(s), 300);
}

}  // namespace

int KernelbenchBatch::exit_code() const {
  for (const auto& e : entries) {
    if (!imported(e) || e.reference == ReferenceStatus::failed) return 1;
    for (const auto* b : {&e.eager, &e.compiled})
      if (b->status == VariantStatus::run_failed) return 1;
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
  }

  // Imports in parallel: each is a Python process of its own.
  std::atomic<std::size_t> next{0};
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
      if (imported(e) && !o.force && fs::exists(o.out / e.problem / "kopt.toml")) continue;
      std::optional<Error> env;
      import_one(e, files[i], o.out / e.problem, o, importer, env);
      o.log(fmt::format("[{:.0f} s] import {}: {} ({:.1f} s){}", seconds_since(t0), e.file,
                        name_of(e.status), e.import_s, e.error.empty() ? "" : ": " + e.error));
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
  if (environment) return Unexpected(*environment);

  // References and baselines, one problem at a time: timings share no GPU.
  if (o.check || o.baselines)
    for (auto& e : batch.entries) {
      if (!needs_evaluation(e, o) && !(o.force && imported(e))) continue;
      evaluate(e, o.out / e.problem);
      o.log(fmt::format(
          "[{:.0f} s] {}: reference {} ({:.1f} s), eager {}, torch.compile {} ({:.1f} s)",
          seconds_since(t0), e.problem, e.reference, e.reference_s, time_cell(e.eager),
          time_cell(e.compiled), e.baselines_s));
      state.save(batch);
    }
  batch.wall_s = seconds_since(t0);
  state.save(batch);
  return batch;
}

KernelbenchEvaluator worker_evaluator(const KernelbenchBatchOptions& o,
                                      evaluate::CheckContext ctx) {
  return [o, ctx](KernelbenchEntry& e, const fs::path& dir) mutable {
    auto problem = load_problem(dir);
    if (!problem) {
      e.reference = ReferenceStatus::failed;
      e.reference_error = problem.error().to_string();
      return;
    }
    problem->kernels.clear();  // the reference and the baselines, not kernels someone added
    if (o.check) {
      auto t0 = Clock::now();
      // KernelBench's reference outputs reach GBs: not kept, and in RAM where there is room.
      TempDir scratch("kopt-kernelbench", problem_tensor_bytes(*problem));
      evaluate::CheckOptions co;
      co.seeds = 1;
      co.cache_root = scratch.path();
      auto report = evaluate::run_check(*problem, co, ctx);
      e.reference_s = seconds_since(t0);
      e.reference = report && report->device ? ReferenceStatus::ok : ReferenceStatus::failed;
      e.reference_error = !report          ? report.error().message
                          : report->device ? ""
                                           : report->device_error;
    }
    if (o.baselines) {
      auto t0 = Clock::now();
      evaluate::EvaluatorOptions eo;
      eo.cache_root = o.cache_root;
      evaluate::Evaluator ev(*problem, {ctx}, eo);
      evaluate::Rigour r = o.rigour;
      r.check = false;
      auto report = ev.with_baselines({}, r);
      e.baselines_s = seconds_since(t0);
      if (!report) {
        e.eager.status = e.compiled.status = VariantStatus::run_failed;
        e.eager.error = e.compiled.error = report.error().message;
        return;
      }
      for (const auto& v : report->variants) {
        BaselineOutcome& b = v.kernel.rfind("torch.compile", 0) == 0 ? e.compiled : e.eager;
        b = BaselineOutcome{};
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
  };
}

json to_json(const KernelbenchEntry& e) {
  return {{"file", e.file},
          {"problem", e.problem},
          {"status", e.status},
          {"error", e.error},
          {"import_s", e.import_s},
          {"flops_known", e.flops_known},
          {"notes", e.notes},
          {"reference", e.reference},
          {"reference_error", e.reference_error},
          {"reference_s", e.reference_s},
          {"baselines_s", e.baselines_s},
          {"eager", to_json(e.eager)},
          {"compile", to_json(e.compiled)}};
}

KernelbenchEntry kernelbench_entry_from_json(const json& j) {
  KernelbenchEntry e;
  e.file = j.at("file");
  e.problem = j.value("problem", fs::path(e.file).stem().string());
  e.status = j.value("status", e.status);
  e.error = j.value("error", std::string{});
  e.import_s = j.value("import_s", 0.0);
  e.flops_known = j.value("flops_known", false);
  e.notes = j.value("notes", std::vector<std::string>{});
  e.reference = j.value("reference", e.reference);
  e.reference_error = j.value("reference_error", std::string{});
  e.reference_s = j.value("reference_s", 0.0);
  e.baselines_s = j.value("baselines_s", 0.0);
  if (j.contains("eager")) e.eager = baseline_from_json(j.at("eager"));
  if (j.contains("compile")) e.compiled = baseline_from_json(j.at("compile"));
  return e;
}

json to_json(const KernelbenchBatch& b) {
  json problems = json::array();
  std::size_t n_imported = 0, refused = 0, failed = 0, reference_ok = 0, both_timed = 0;
  for (const auto& e : b.entries) {
    problems.push_back(to_json(e));
    n_imported += imported(e);
    refused += e.status == ImportStatus::refused;
    failed += e.status == ImportStatus::failed;
    reference_ok += e.reference == ReferenceStatus::ok;
    both_timed += e.eager.status == VariantStatus::ok && e.compiled.status == VariantStatus::ok;
  }
  return {{"schema_version", 1},          {"command", "import kernelbench"},
          {"device", b.device},           {"wall_s", b.wall_s},
          {"files", b.entries.size()},    {"imported", n_imported},
          {"refused", refused},           {"failed", failed},
          {"reference_ok", reference_ok}, {"baselines_timed", both_timed},
          {"problems", problems},         {"exit_code", b.exit_code()}};
}

std::string kernelbench_markdown(const KernelbenchBatch& b) {
  json totals = to_json(b);
  std::string md = fmt::format(
      "{} files: {} imported, {} refused, {} failed; reference ran on {}; both baselines timed on "
      "{}{}.\n\n",
      totals["files"].get<std::size_t>(), totals["imported"].get<std::size_t>(),
      totals["refused"].get<std::size_t>(), totals["failed"].get<std::size_t>(),
      totals["reference_ok"].get<std::size_t>(), totals["baselines_timed"].get<std::size_t>(),
      b.device.empty() ? "" : " (" + b.device + ")");
  md +=
      "| problem | import s | flops | reference | eager | torch.compile | noise eager / compile | "
      "why not, flags |\n";
  md += "|---|---:|---|---|---:|---:|---|---|\n";
  for (const auto& e : b.entries) {
    std::string why = e.error;
    for (const std::string* s : {&e.reference_error, &e.eager.error, &e.compiled.error})
      if (!s->empty()) why += (why.empty() ? "" : "; ") + *s;
    for (const auto* bl : {&e.eager, &e.compiled})
      for (const auto& f : bl->flags)
        why += (why.empty() ? "" : "; ") + std::string(bl == &e.eager ? "eager " : "compile ") + f;
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} / {} | {} |\n", cell(e.problem),
        e.status == ImportStatus::kept ? std::string("kept") : fmt::format("{:.1f}", e.import_s),
        imported(e) ? (e.flops_known ? "formula" : "unknown") : "-",
        e.reference == ReferenceStatus::ok ? fmt::format("ok ({:.1f} s)", e.reference_s)
                                           : std::string(name_of(e.reference)),
        time_cell(e.eager), time_cell(e.compiled), noise_cell(e.eager), noise_cell(e.compiled),
        cell(imported(e) ? why : std::string(name_of(e.status)) + ": " + why));
  }
  return md;
}

}  // namespace kopt::campaign
