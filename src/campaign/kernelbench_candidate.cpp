// A problem's candidate in the KernelBench batch (`kopt import kernelbench DIR --candidates
// CDIR`): the ModelNew file of the problem's name, made a kernel of the imported problem as
// `kopt check NEW.py --ref FILE.py` makes it, checked as `kopt check` checks a kernel (every
// seed, the secret seed drawn at run time, the wide seed, the other shapes) and timed as
// `kopt bench` times one (poisoned, verified samples) — in the batch's worker, with no process
// started per candidate.
#include <fmt/format.h>

#include "kernelbench_cells.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/problem/bare_files.hpp"
#include "kopt/problem/kernelbench.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::campaign {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* k_kernel = "model_new";  // the candidate's kernel in its problem

// The imported problem with the candidate as its one kernel: NAME_modelnew.py (the file with
// the import's run_kernel() adapter appended) and candidate.toml (kopt.toml and that kernel),
// beside kopt.toml so that its relative paths hold.
Expected<Problem> candidate_problem(const fs::path& dir, const fs::path& file,
                                    const std::string& stem) {
  auto bare = read_bare_kernel(file);
  if (!bare) return Unexpected(bare.error());
  if (bare->kind != BareKind::model_new)
    return Unexpected(
        bad_input("a candidate of a KernelBench problem is a ModelNew file: "
                  "this one defines no class ModelNew",
                  file.string(), 0, "ModelNew"));
  auto text = read_text_file(file);
  if (!text) return Unexpected(bad_input(text.error().message, file.string()));
  auto adapter = read_text_file(dir / k_model_new_adapter_file);
  if (!adapter)
    return Unexpected(bad_input("the problem was imported without " +
                                    std::string(k_model_new_adapter_file) +
                                    " (an earlier kopt): --force imports it again",
                                (dir / "kopt.toml").string()));
  auto toml = read_text_file(dir / "kopt.toml");
  if (!toml) return Unexpected(toml.error());
  std::string source = stem + "_modelnew.py";
  if (auto w = write_text_atomic(dir / source, *text + *adapter); !w) return Unexpected(w.error());
  std::string spec = *toml + "\n# The candidate " + file.filename().string() +
                     " as a kernel (written by the batch for each evaluation).\n" +
                     model_new_kernel_toml(k_kernel, source);
  if (auto w = write_text_atomic(dir / "candidate.toml", spec); !w) return Unexpected(w.error());
  return load_problem(dir / "candidate.toml");
}

// Why the check refused it: its status, its error, the first seed it was wrong on (what
// differed, by how much) and the shapes it was wrong at.
std::string check_cause(const evaluate::CheckReport& r, const evaluate::KernelCheck& k) {
  std::string cause = std::string(name_of(k.status));
  if (!k.error.empty()) cause += ": " + k.error;
  for (const auto& s : k.seeds) {
    if (s.passed || s.status != RunStatus::ok) continue;
    std::string seed = s.input_scale != 1
                           ? fmt::format("seed {} (inputs {:g}x wider)", s.seed, s.input_scale)
                           : fmt::format("seed {}", s.seed);
    for (const auto& name : s.modified_inputs)
      cause += fmt::format("; {}: it modified its input '{}'", seed, name);
    for (const auto& o : s.outputs)
      if (!o.passed)
        cause += fmt::format(
            "; {}: '{}' {} of {} elements differ (max abs error {:.3g}, atol {:g} rtol {:g}{})",
            seed, o.tensor, o.mismatches, o.numel, o.max_abs_err, o.tolerance.atol,
            o.tolerance.rtol, o.unwritten ? fmt::format(", {} never written", o.unwritten) : "");
    break;
  }
  for (const auto& s : r.shape_checks)
    for (const auto& f : s.failed)
      if (f.rfind(k_kernel, 0) == 0)
        cause += fmt::format("; wrong at {} ({})", s.dims, shape_origin_name(s.origin));
  return cause;
}

}  // namespace

void mark_candidate(KernelbenchEntry& e, const fs::path& candidates) {
  if (candidates.empty()) return;  // earlier records stay as they are
  fs::path file = candidates / e.file;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    e.candidate = CandidateOutcome{};
    return;
  }
  auto text = read_text_file(file);
  std::string hash = text ? sha256_hex(*text) : std::string{};
  if (e.candidate.file == e.file && e.candidate.hash == hash &&
      e.candidate.verdict != CandidateVerdict::none)
    return;  // evaluated as it is now, or waiting to be
  e.candidate = CandidateOutcome{};
  e.candidate.file = e.file;
  e.candidate.hash = hash;
  e.candidate.verdict = CandidateVerdict::not_run;
}

bool candidate_due(const KernelbenchEntry& e, const KernelbenchBatchOptions& o) {
  return !o.candidates.empty() && e.candidate.verdict == CandidateVerdict::not_run;
}

Expected<void> evaluate_candidate(KernelbenchEntry& e, const fs::path& dir,
                                  const KernelbenchBatchOptions& o, evaluate::CheckContext ctx) {
  CandidateOutcome& c = e.candidate;
  c = CandidateOutcome{.file = c.file, .hash = c.hash, .verdict = CandidateVerdict::failed};
  auto refused = [&](const Error& err) -> Expected<void> {
    if (err.kind == ErrorKind::environment) {
      c.verdict = CandidateVerdict::not_run;  // not its doing: a resume evaluates it again
      return Unexpected(err);
    }
    c.cause = err.to_string().substr(0, 2000);
    return {};
  };
  if (e.reference != ReferenceStatus::ok) {
    c.cause = "the problem's reference did not run: nothing to check the candidate against";
    return {};
  }
  auto problem = candidate_problem(dir, o.candidates / c.file, e.problem);
  if (!problem) return refused(problem.error());

  auto t0 = Clock::now();
  // The references of its seeds, for its check and its timing: in RAM where there is room,
  // gone with the evaluation (a cache of every problem's would fill the disk: it did).
  TempDir scratch("kopt-candidate", 2 * problem_tensor_bytes(*problem));
  evaluate::CheckOptions co;
  co.kernels = {k_kernel};
  co.secret_seed = true;
  co.cache_root = scratch.path();
  // Where its time goes, seed by seed (each line says its run and its comparison).
  auto log = [&o, name = e.problem](const std::string& line) { o.log(name + ": " + line); };
  co.log = log;
  auto report = evaluate::run_check(*problem, co, ctx);
  if (!report) return refused(report.error());
  if (report->device && !report->kernels.empty() &&
      report->kernels.front().status == evaluate::KernelStatus::passed)
    if (auto shapes = evaluate::check_other_shape(*problem, co, ctx, *report); !shapes)
      return refused(shapes.error());
  c.check_s = seconds_since(t0);
  if (!report->device || report->kernels.empty()) {
    c.cause = report->device ? "the check ran no kernel of it"
                             : "no device ran it: " + report->device_error;
    return {};
  }
  const evaluate::KernelCheck& k = report->kernels.front();
  c.check = k.status;
  if (k.status != evaluate::KernelStatus::passed) {
    c.cause = check_cause(*report, k).substr(0, 2000);
    return {};
  }

  t0 = Clock::now();
  evaluate::EvaluatorOptions eo;
  eo.cache_root = o.cache_root;
  eo.references_root = scratch.path();  // seed 1's is there already; none fills the cache
  eo.log = log;
  evaluate::Evaluator ev(*problem, {ctx}, eo);
  evaluate::Rigour r = o.rigour;
  r.check = true;  // its timed samples poisoned and verified
  auto bench = ev.side_by_side({{k_kernel, {}}}, r);
  c.bench_s = seconds_since(t0);
  if (!bench) return refused(bench.error());
  for (const auto& v : bench->variants) {
    if (v.kernel != k_kernel) continue;
    c.timing = TimedOutcome{.status = v.status,
                            .label = v.kernel,
                            .median_s = v.summary.median,
                            .rel_noise = v.summary.rel_noise,
                            .n = v.summary.n,
                            .error = v.error.substr(0, 2000)};
    for (const auto& f : v.flags) c.timing.flags.push_back(f.name + ": " + f.detail);
    if (v.status != VariantStatus::ok) {
      c.cause = (std::string(name_of(v.status)) + (v.error.empty() ? "" : ": " + v.error))
                    .substr(0, 2000);
      return {};
    }
    c.verdict = CandidateVerdict::passed;
    return {};
  }
  c.cause = "the timing reported no row for it";
  return {};
}

}  // namespace kopt::campaign
