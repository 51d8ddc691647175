#include "kopt/evaluate/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "bench_checks.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/sandbox.hpp"
#include "kopt/evaluate/fits.hpp"
#include "kopt/evaluate/roofs.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/measure/review.hpp"
#include "kopt/problem/precision.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
namespace {
using Clock = std::chrono::steady_clock;
// Where the table's candidates with host code ran, and how they were confined: `python_ran`
// is what the worker said of its Python candidates' process, else what this machine allows.
std::string sandbox_note(bool python, bool solve, const std::string& python_ran = {}) {
  std::string note;
  if (python)
    note = "Python candidates " + (python_ran.empty() ? "run confined where this machine allows: " +
                                                            sandbox_support().summary()
                                                      : "ran " + python_ran);
  if (solve)
    note += std::string(note.empty() ? "" : "; ") +
            "solve() host code is NOT confined (it runs in kopt's worker process)";
  return note;
}
}  // namespace

int BenchReport::exit_code() const {
  for (const auto& v : variants)
    if (v.status != VariantStatus::ok && v.status != VariantStatus::unavailable) return 1;
  return 0;
}

namespace {

class BenchRun {
 public:
  BenchRun(const Problem& p, const BenchRequest& r, CheckContext c) : m_p(p), m_r(r), m_ctx(c) {}

  Expected<BenchReport> run() {
    m_report.problem = m_p.name;
    m_report.options = m_r.options;
    // Points first: bad input is reported as such, with or without a GPU.
    std::vector<std::pair<const KernelSpec*, ParamPoint>> points;
    for (const auto& spec : m_r.variants) {
      const KernelSpec* k = m_p.find_kernel(spec.kernel);
      if (!k)
        return Unexpected(
            bad_input("no kernel named '" + spec.kernel + "'", m_p.spec_path.string()));
      for (const auto& [name, value] : spec.sets)
        if (!k->find_param(name))
          return Unexpected(bad_input("kernel '" + k->name + "' has no param named '" + name + "'",
                                      m_p.spec_path.string(), k->where.line,
                                      k->where.field + ".params"));
      auto point = resolve_point(m_p, *k, spec.sets);
      if (!point) return Unexpected(point.error());
      points.emplace_back(k, *point);
    }
    auto device = m_ctx.worker.device_info();
    if (!device) return Unexpected(device.error());
    if (auto fits = check_fits_device(m_p, *device); !fits) return Unexpected(fits.error());
    m_report.device = *device;
    std::string arch = m_r.arch.value_or(device->arch());
    auto toolkit = m_ctx.compiler.toolkit();
    if (!toolkit) return Unexpected(toolkit.error());
    m_report.toolkit = *toolkit;
    BuildCache cache(m_ctx.compiler, m_r.cache_root / "builds");

    std::vector<ResolvedLaunch> launches;
    std::vector<CompileRequest> requests;
    for (const auto& [k, point] : points) {
      auto launch = resolve_launch(m_p, *k, point, device->limits);
      if (!launch) return Unexpected(launch.error());
      BenchVariant v;
      v.kernel = k->name;
      v.point = point;
      requests.push_back(compile_request(m_p, *k, point, arch));
      launches.push_back(*launch);
      m_report.variants.push_back(std::move(v));
    }
    auto phase = Clock::now();
    auto builds = cache.build_all(requests, m_r.jobs);
    m_report.build_s = seconds_since(phase);
    bool python = false, solve = false;
    for (std::size_t i = 0; i < builds.size(); ++i) {
      if (!builds[i]) return Unexpected(builds[i].error());
      BenchVariant& v = m_report.variants[i];
      v.build = *builds[i];
      python |= v.build.module_kind == ModuleKind::triton;
      solve |= v.build.module_kind == ModuleKind::solve_library;
      if (!v.build.ok) {
        v.status = VariantStatus::compile_failed;
        v.error = v.build.log;
      }
    }
    m_report.sandbox = sandbox_note(python, solve);
    phase = Clock::now();
    // The reference for the check inside the timing job, and a secret seed's for its
    // secret-seed samples (output_verifier.hpp).
    std::optional<CheckReport> reference;
    m_inside = m_r.check_first && check_in_timing_possible(m_p, m_r, m_report.variants);
    bool secret = secret_samples_possible(m_p, m_r, m_report.variants);
    if (m_r.check_first && !m_inside)
      if (auto e = check_variants(m_p, m_r, m_ctx, m_report.variants); !e)
        return Unexpected(e.error());
    if (m_inside || secret || inouts_checked_in_timing(m_p, m_r, m_report.variants)) {
      auto r = seed_reference(m_p, m_r, m_ctx,
                              secret ? m_tmp.path() / "secret" : std::filesystem::path{});
      if (!r) return Unexpected(r.error());
      reference = std::move(*r);
    }
    m_report.check_s = seconds_since(phase);
    std::vector<std::size_t> timed = ok_variants();  // nothing wrong is ever timed
    if (timed.size() < m_report.variants.size() && (!m_r.time_the_rest || timed.empty()))
      return m_report;

    auto inputs = write_seed_inputs(m_p, 1, m_tmp.path() / "inputs");
    if (!inputs) return Unexpected(inputs.error());
    if (m_r.compare && timer_families(timed).size() > 1)
      return Unexpected(bad_input(
          m_report.variants[0].kernel + " and " + m_report.variants[1].kernel +
          " run in different timers (a Triton kernel in the Python worker, a CUDA kernel or "
          "solve() library in the CUDA timer): they cannot be sampled in interleaved pairs; "
          "bench them side by side, without --vs-kernel"));
    auto timing = time_all(timed, launches, *inputs, reference);
    if (!timing) return Unexpected(timing.error());
    BenchResult result = std::move(*timing);
    if (!result.ok()) {  // every timed variant failed: each says why; the baselines still run
      for (auto& v : m_report.variants)
        if (v.status == VariantStatus::ok) fail_run(v, result);
      result = BenchResult{};
      result.clocks_before = result.clocks_after = m_report.device.clocks;
    }
    result.series.resize(m_report.variants.size());
    if (m_r.vs_torch) {
      auto torch = time_torch(*inputs);
      if (!torch) return Unexpected(torch.error());
      for (auto& s : torch->series) result.series.push_back(std::move(s));
    }
    m_report.clocks_before = result.clocks_before;
    m_report.clocks_after = result.clocks_after;
    m_report.flush_bytes = result.flush_bytes;
    m_report.flush_method = result.flush_method;
    if (!result.sandbox.empty()) m_report.sandbox = sandbox_note(python, solve, result.sandbox);
    m_report.cost = m_p.cost_at_dims();
    mark_inconsistent(result);
    derive(result);
    flag_distributions();
    review_speedups();
    return m_report;
  }

 private:
  // The PyTorch reference, eager and compiled, timed by the Python worker: two more rows.
  Expected<BenchResult> time_torch(const SeedInputs& inputs) {
    if (m_p.reference.kind != ReferenceKind::python)
      return Unexpected(bad_input(
          "--vs-torch times the PyTorch reference: the reference must be a ref.py (kind = "
          "\"python\")",
          m_p.spec_path.string(), m_p.reference.kernel.where.line, "reference.kind"));
    // One job per baseline: a torch without torch.compile still gets its eager row.
    BenchResult all;
    for (ModuleKind kind : {ModuleKind::torch_eager, ModuleKind::torch_compile}) {
      BenchJob job;
      job.options = m_r.options;
      RunJob rj;
      rj.kind = kind;
      rj.label = kind == ModuleKind::torch_eager ? "torch eager" : "torch.compile";
      rj.module_path = std::filesystem::absolute(m_p.dir / m_p.reference.kernel.source);
      rj.entry = m_p.reference.kernel.entry;
      for (const auto& d : m_p.dims) rj.scalars[d.name] = d.value;
      rj.tensors = job_tensors(m_p, inputs, m_tmp.path() / rj.label);
      job.variants.push_back(std::move(rj));
      BenchVariant v;
      v.kernel = job.variants.back().label;
      m_r.log("timing the PyTorch reference: " + v.kernel);
      BenchResult r = m_ctx.worker.bench(job);
      if (r.ok()) {
        v.kernel = r.series.at(0).label;  // "(reference())" added where ref.py has no baseline
        all.series.push_back(std::move(r.series.at(0)));
      } else {
        std::string first_line = r.error.substr(0, r.error.find('\n'));
        // A torch before 2.0 has no torch.compile: a fact of this machine, not a failure.
        v.status = first_line.find("has no torch.compile") != std::string::npos
                       ? VariantStatus::unavailable
                       : VariantStatus::run_failed;
        v.error = first_line;
        all.series.push_back(SampleSeries{});  // keeps the rows aligned with their series
      }
      m_report.variants.push_back(std::move(v));
    }
    return all;
  }

  // The variants `timed` grouped by the timer that samples them: the Python worker's (Triton
  // kernels) and the worker's own (CUDA kernels, solve() libraries, OpenCL): one job each.
  std::vector<std::vector<std::size_t>> timer_families(
      const std::vector<std::size_t>& timed) const {
    std::vector<std::size_t> python, native;
    for (std::size_t i : timed)
      (is_python(m_report.variants[i].build.module_kind) ? python : native).push_back(i);
    std::vector<std::vector<std::size_t>> out;
    if (!native.empty()) out.push_back(native);
    if (!python.empty()) out.push_back(python);
    return out;
  }

  // Every variant of `timed` timed, a job per timer family; a job that fails (a candidate
  // that faults or hangs ends it) is run again one variant at a time, so that one variant's
  // failure is that variant's alone. With the check inside the job, the separate check first
  // finds the wrong ones. One series per variant of the report.
  Expected<BenchResult> time_all(const std::vector<std::size_t>& timed,
                                 const std::vector<ResolvedLaunch>& launches,
                                 const SeedInputs& inputs,
                                 const std::optional<CheckReport>& reference) {
    BenchResult merged;
    merged.series.resize(m_report.variants.size());
    std::optional<BenchResult> first_failure;
    bool any_ok = false;
    for (const auto& family : timer_families(timed)) {
      BenchResult r = time_variants(family, launches, inputs, reference);
      if (r.environment) return Unexpected(environment_error(r.error));
      if (!r.ok() && family.size() > 1) {
        if (m_inside) {
          m_r.log("the timing job failed (" + std::string(run_status_name(r.status)) +
                  "): checking each variant on its own");
          auto phase = Clock::now();
          if (auto e = check_variants(m_p, m_r, m_ctx, m_report.variants); !e)
            return Unexpected(e.error());
          m_report.check_s += seconds_since(phase);
        }
        std::vector<std::size_t> still;
        for (std::size_t i : family)
          if (m_report.variants[i].status == VariantStatus::ok) still.push_back(i);
        r = time_one_by_one(still, launches, inputs, reference);
        if (r.environment) return Unexpected(environment_error(r.error));
      } else if (!r.ok()) {
        for (std::size_t i : family) fail_run(m_report.variants[i], r);
        if (!first_failure) first_failure = r;
        continue;
      }
      any_ok = true;
      for (std::size_t i : family)
        if (i < r.series.size()) merged.series[i] = std::move(r.series[i]);
      // The clocks and the flush of the first job that read them (the Python worker's timer
      // reads no clocks).
      if (merged.clocks_before.sm_mhz <= 0) merged.clocks_before = r.clocks_before;
      if (merged.clocks_after.sm_mhz <= 0) merged.clocks_after = r.clocks_after;
      if (merged.flush_method.empty()) {
        merged.flush_bytes = r.flush_bytes;
        merged.flush_method = r.flush_method;
      }
      if (merged.sandbox.empty()) merged.sandbox = r.sandbox;
    }
    if (!any_ok && first_failure) return *first_failure;
    if (timed.empty()) merged.clocks_before = merged.clocks_after = m_report.device.clocks;
    return merged;
  }

  // One timing job over the variants `timed` (indices into the report): one series per
  // variant of the report, empty for those not timed; with `reference`, the job checks each
  // variant against it first and the wrong ones are marked.
  BenchResult time_variants(const std::vector<std::size_t>& timed,
                            const std::vector<ResolvedLaunch>& launches, const SeedInputs& inputs,
                            const std::optional<CheckReport>& reference) {
    BenchJob job;
    job.options = m_r.options;
    job.options.paired = m_r.compare;
    job.options.verdict_threshold = m_r.threshold;
    for (std::size_t i : timed) {
      const auto& v = m_report.variants[i];
      job.variants.push_back(
          kernel_job(v.kernel + " [" + point_to_string(v.point) + "]", v.build, launches[i],
                     job_tensors(m_p, inputs, m_tmp.path() / ("out" + std::to_string(i)))));
      if (reference) expect_reference(job.variants.back(), *reference, m_inside);
    }
    m_r.log("timing " + std::to_string(job.variants.size()) + " variant(s), " +
            std::string(cache_mode_name(m_r.options.mode)) + " cache");
    // With --vs-torch and no kernel (a fresh import), only the PyTorch baselines are timed.
    BenchResult result;
    if (job.variants.empty())
      result.clocks_before = result.clocks_after = m_report.device.clocks;  // at device_info
    else {
      auto t0 = Clock::now();
      result = m_ctx.worker.bench(job);
      m_report.measure_s += seconds_since(t0);
    }
    if (result.ok() &&
        timed.size() < m_report.variants.size()) {  // one series per variant, untimed ones empty
      std::vector<SampleSeries> aligned(m_report.variants.size());
      for (std::size_t t = 0; t < timed.size() && t < result.series.size(); ++t)
        aligned[timed[t]] = std::move(result.series[t]);
      result.series = std::move(aligned);
    }
    if (result.ok()) mark_wrong(m_report.variants, result);
    return result;
  }

  std::vector<std::size_t> ok_variants() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < m_report.variants.size(); ++i)
      if (m_report.variants[i].status == VariantStatus::ok) out.push_back(i);
    return out;
  }

  static void fail_run(BenchVariant& v, const BenchResult& r) {
    v.status = VariantStatus::run_failed;
    v.error = std::string(run_status_name(r.status)) + ": " + r.error;
  }

  // Each variant in a job of its own: the one whose job fails is that variant's failure alone.
  BenchResult time_one_by_one(const std::vector<std::size_t>& timed,
                              const std::vector<ResolvedLaunch>& launches, const SeedInputs& inputs,
                              const std::optional<CheckReport>& reference) {
    BenchResult merged;
    merged.series.resize(m_report.variants.size());
    for (std::size_t i : timed) {
      BenchResult r = time_variants({i}, launches, inputs, reference);
      if (r.environment) return r;  // the machine's limit: the caller stops, no verdict
      if (!r.ok()) {
        fail_run(m_report.variants[i], r);
        continue;
      }
      merged.series[i] = std::move(r.series[i]);
      merged.clocks_before = r.clocks_before;
      merged.clocks_after = r.clocks_after;
      if (merged.sandbox.empty()) merged.sandbox = r.sandbox;
      merged.flush_bytes = r.flush_bytes;
      merged.flush_method = r.flush_method;
    }
    return merged;
  }

  // A variant whose timed launches left outputs that differ from an untimed launch's (the
  // worker's verification, output_verifier.hpp) is failed: its times are kept, never a result.
  void mark_inconsistent(const BenchResult& result) {
    for (std::size_t i = 0; i < m_report.variants.size() && i < result.series.size(); ++i) {
      const SampleVerification& check = result.series[i].verification;
      BenchVariant& v = m_report.variants[i];
      if (!check.failed() || v.status != VariantStatus::ok) continue;
      v.status = VariantStatus::inconsistent;
      v.error = "timed launches do not compute what an untimed launch computes: " + check.failure +
                "; its times are not a result";
    }
  }

  // A kernel over 10x faster than torch eager is flagged for review, as KernelBench does: it
  // may be real (a fusion eager lacks), or work skipped in a way no other check saw.
  void review_speedups() {
    const BenchVariant* eager = nullptr;
    for (const auto& v : m_report.variants)
      if (is_torch_eager_row(v.kernel) && v.status == VariantStatus::ok && v.summary.median > 0)
        eager = &v;
    if (!eager) return;
    for (auto& v : m_report.variants) {
      if (&v == eager || v.kernel.rfind("torch", 0) == 0 || v.status != VariantStatus::ok) continue;
      if (auto note = review_speedup_over_eager(v.summary.median, eager->summary.median))
        v.reviews.push_back(*note);
    }
  }

  void flag_distributions() {
    for (auto& v : m_report.variants)
      v.flags = distribution_flags(v.series.samples_s, v.series.verification.secret_samples);
  }

  // Rates and % of the roofs per variant; a median below the floor is an error.
  void judge(const BenchResult& result) {
    const DeviceRoofs& roofs = m_report.roofs;
    m_report.compute_roof =
        precision_roof(roofs, problem_precision(m_p),
                       allowed_precision(m_p, nullptr).precision <= Precision::tf32);
    Cost cost = m_p.cost_at_dims();
    double bytes = cost.bytes.value_or(0), flops = cost.flops.value_or(0);
    for (std::size_t i = 0; i < m_report.variants.size() && i < result.series.size(); ++i) {
      BenchVariant& v = m_report.variants[i];
      if (v.status == VariantStatus::below_floor) {  // judged again, with roofs measured once more
        v.status = VariantStatus::ok;
        v.error.clear();
      }
      v.series = result.series[i];
      v.summary = summarize(v.series.samples_s);
      v.throttled_samples = 0;
      for (bool t : v.series.throttled) v.throttled_samples += t;
      double t = v.summary.median;
      if (t <= 0) continue;
      v.gbps = bytes / t / 1e9;
      v.gflops = flops / t / 1e9;
      if (roofs.bandwidth.rate > 0)
        v.pct_bandwidth_ceiling = 100.0 * bytes / t / roofs.bandwidth.rate;
      if (m_report.compute_roof.rate > 0)
        v.pct_compute_ceiling = 100.0 * flops / t / m_report.compute_roof.rate;
      // The DRAM floor holds only when the data come from DRAM: in cold mode.
      v.floor_s = roofline_floor_s(roofs, bytes, flops, m_r.options.mode == CacheMode::cold);
      if (v.status == VariantStatus::ok && is_below_floor(roofs, t, v.floor_s)) {
        v.status = VariantStatus::below_floor;
        v.error =
            "median " + std::to_string(t * 1e6) + " us is below the roofline floor of " +
            std::to_string(v.floor_s * 1e6) + " us (roofs: " + roofs.source +
            "): an error of the harness or of the kernel (does it do all its work?), not a result";
      }
    }
  }

  // Rates, % of the roofs and the floor check. The roofs always exist where anything can
  // give them (roofs.hpp: stored, measured now on first use, or the spec table), so the floor
  // applies on a fresh cache too.
  void derive(const BenchResult& result) {
    m_report.roofs =
        resolve_roofs(m_r.cache_root, m_report.device, worker_ceilings(m_ctx.worker), m_r.log);
    judge(result);
    // A CPU's roofs measured while the host was busy can be low: before a time below their
    // floor is called an error, they are measured once more and the best of both kept.
    if (roofs_may_be_low(m_report.roofs, m_report.device) &&
        std::any_of(m_report.variants.begin(), m_report.variants.end(),
                    [](const BenchVariant& v) { return v.status == VariantStatus::below_floor; })) {
      m_report.roofs = remeasure_roofs(m_r.cache_root, m_report.device,
                                       worker_ceilings(m_ctx.worker), m_report.roofs, m_r.log);
      judge(result);
    }
    m_report.ceilings_source = m_report.roofs.source;
    if (m_r.compare && result.series.size() == 2)
      m_report.comparison =
          compare_paired(result.series[0].samples_s, result.series[1].samples_s, m_r.threshold);
  }

  const Problem& m_p;
  const BenchRequest& m_r;
  CheckContext m_ctx;
  BenchReport m_report;
  TempDir m_tmp{
      "kopt-bench",
      3 * problem_tensor_bytes(m_p)};  // seed 1's inputs, a secret seed's, each variant's outputs
  bool m_inside = false;               // the check is inside the timing job
};

}  // namespace

Expected<BenchReport> run_bench(const Problem& problem, const BenchRequest& request,
                                CheckContext ctx) {
  try {
    auto t0 = Clock::now();
    BenchRun run(problem, request, ctx);
    auto report = run.run();
    if (report) report->wall_s = seconds_since(t0);
    return report;
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("bench: ") + e.what()));
  }
}

}  // namespace kopt::evaluate
