#include "kopt/engine/bencher.hpp"

#include "kopt/core/fs.hpp"
#include "kopt/engine/ceilings_store.hpp"
#include "kopt/engine/variant_jobs.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

BenchRequest bench_request(std::vector<BenchVariantSpec> variants, bool compare, const BenchOptions& options,
                           double threshold, const std::optional<std::string>& arch, const fs::path& cache_root) {
  BenchRequest r;
  r.variants = std::move(variants);
  r.compare = compare;
  r.options = options;
  r.threshold = threshold;
  r.arch = arch;
  r.cache_root = cache_root;
  return r;
}

int BenchReport::exit_code() const {
  for (const auto& v : variants)
    if (v.status != "ok" && v.status != "unavailable") return 1;
  return 0;
}

namespace {

// Time below this share of the roofline floor is an error: the floor comes from measured
// ceilings, which a good kernel may beat by a few percent, never by this much.
constexpr double k_floor_margin = 0.9;

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
      if (!k) return Unexpected(bad_input("no kernel named '" + spec.kernel + "'", m_p.spec_path.string()));
      for (const auto& [name, value] : spec.sets)
        if (!k->find_param(name))
          return Unexpected(bad_input("kernel '" + k->name + "' has no param named '" + name + "'",
                                      m_p.spec_path.string(), k->where.line, k->where.field + ".params"));
      auto point = resolve_point(m_p, *k, spec.sets);
      if (!point) return Unexpected(point.error());
      points.emplace_back(k, *point);
    }
    auto device = m_ctx.worker.device_info();
    if (!device) return Unexpected(device.error());
    m_report.device = *device;
    std::string arch = m_r.arch.value_or(device->arch());
    auto toolkit = m_ctx.compiler.toolkit();
    if (!toolkit) return Unexpected(toolkit.error());
    m_report.toolkit = *toolkit;
    BuildCache cache(m_ctx.compiler, m_r.cache_root / "builds");

    std::vector<ResolvedLaunch> launches;
    for (const auto& [k, point] : points) {
      auto launch = resolve_launch(m_p, *k, point, device->limits);
      if (!launch) return Unexpected(launch.error());
      BenchVariant v;
      v.kernel = k->name;
      v.point = point;
      auto b = cache.build(compile_request(m_p, *k, point, arch));
      if (!b) return Unexpected(b.error());
      v.build = *b;
      if (!b->ok) {
        v.status = "compile_failed";
        v.error = b->log;
      }
      launches.push_back(*launch);
      m_report.variants.push_back(std::move(v));
    }
    if (m_r.check_first)
      if (auto e = check_variants(); !e) return Unexpected(e.error());
    for (const auto& v : m_report.variants)
      if (v.status != "ok") return m_report;  // nothing wrong is ever timed

    auto inputs = write_seed_inputs(m_p, 1, m_tmp.path() / "inputs");
    if (!inputs) return Unexpected(inputs.error());
    BenchJob job;
    job.options = m_r.options;
    job.options.paired = m_r.compare;
    job.options.verdict_threshold = m_r.threshold;
    for (std::size_t i = 0; i < m_report.variants.size(); ++i) {
      const auto& v = m_report.variants[i];
      job.variants.push_back(kernel_job(v.kernel + " [" + point_to_string(v.point) + "]", v.build, launches[i],
                                        job_tensors(m_p, *inputs, m_tmp.path() / ("out" + std::to_string(i)))));
    }
    m_r.log("timing " + std::to_string(job.variants.size()) + " variant(s), " +
            std::string(cache_mode_name(m_r.options.mode)) + " cache");
    // With --vs-torch and no kernel (a fresh import), only the PyTorch baselines are timed.
    BenchResult result;
    if (job.variants.empty()) result.clocks_before = result.clocks_after = m_report.device.clocks;  // at device_info
    else result = m_ctx.worker.bench(job);
    if (result.ok() && m_r.vs_torch) {
      auto torch = time_torch(*inputs);
      if (!torch) return Unexpected(torch.error());
      for (auto& s : torch->series) result.series.push_back(std::move(s));
    }
    if (!result.ok()) {
      for (auto& v : m_report.variants) {
        v.status = "run_failed";
        v.error = std::string(run_status_name(result.status)) + ": " + result.error;
      }
      return m_report;
    }
    m_report.clocks_before = result.clocks_before;
    m_report.clocks_after = result.clocks_after;
    m_report.flush_bytes = result.flush_bytes;
    m_report.flush_method = result.flush_method;
    derive(result);
    return m_report;
  }

 private:
  // The PyTorch reference, eager and compiled, timed by the Python worker: two more rows.
  Expected<BenchResult> time_torch(const SeedInputs& inputs) {
    if (m_p.reference.kind != ReferenceKind::python)
      return Unexpected(bad_input("--vs-torch times the PyTorch reference: the reference must be a ref.py (kind = "
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
        v.status = first_line.find("has no torch.compile") != std::string::npos ? "unavailable" : "run_failed";
        v.error = first_line;
        all.series.push_back(SampleSeries{});  // keeps the rows aligned with their series
      }
      m_report.variants.push_back(std::move(v));
    }
    return all;
  }

  // A kernel that is wrong is not timed: one seed, against the (cached) reference.
  Expected<void> check_variants() {
    for (auto& v : m_report.variants) {
      if (v.status != "ok") continue;
      CheckOptions co;
      co.kernels = {v.kernel};
      co.sets = std::map<std::string, std::int64_t>(v.point.begin(), v.point.end());
      co.seeds = 1;
      co.arch = m_r.arch;
      co.cache_root = m_r.cache_root;
      auto report = run_check(m_p, co, m_ctx);
      if (!report) return Unexpected(report.error());
      const KernelCheck& kc = report->kernels.front();
      if (kc.status != KernelStatus::passed) {
        v.status = "wrong";
        v.error = "kopt check " + std::string(kernel_status_name(kc.status)) +
                  (kc.error.empty() ? "" : ": " + kc.error) + "; not timed";
      }
    }
    return {};
  }

  void derive(const BenchResult& result) {
    auto stored = load_ceilings(m_r.cache_root, m_report.device);
    m_report.ceilings_source = stored ? "measured " + stored->measured_at : "none: run kopt ceilings";
    double bw = stored ? ceiling_value(stored->result, "dram_copy") : 0;
    double compute = stored ? best_compute_rate(stored->result) : 0;
    Cost cost = m_p.cost_at_dims();
    double bytes = cost.bytes.value_or(0), flops = cost.flops.value_or(0);
    for (std::size_t i = 0; i < m_report.variants.size() && i < result.series.size(); ++i) {
      BenchVariant& v = m_report.variants[i];
      v.series = result.series[i];
      v.summary = summarize(v.series.samples_s);
      for (bool t : v.series.throttled) v.throttled_samples += t;
      double t = v.summary.median;
      if (t <= 0) continue;
      v.gbps = bytes / t / 1e9;
      v.gflops = flops / t / 1e9;
      if (bw > 0) v.pct_bandwidth_ceiling = 100.0 * bytes / t / bw;
      if (compute > 0) v.pct_compute_ceiling = 100.0 * flops / t / compute;
      // The DRAM floor holds only when the data come from DRAM: in cold mode.
      double floor_mem = (bw > 0 && m_r.options.mode == CacheMode::cold) ? bytes / bw : 0;
      double floor_compute = compute > 0 ? flops / compute : 0;
      v.floor_s = std::max(floor_mem, floor_compute);
      if (v.floor_s > 0 && t < k_floor_margin * v.floor_s) {
        v.status = "below_floor";
        v.error = "median " + std::to_string(t * 1e6) + " us is below the roofline floor of " +
                  std::to_string(v.floor_s * 1e6) +
                  " us (measured ceilings): an error of the harness or of the kernel (does it do all its work?), "
                  "not a result";
      }
    }
    if (m_r.compare && result.series.size() == 2)
      m_report.comparison = compare_paired(result.series[0].samples_s, result.series[1].samples_s, m_r.threshold);
  }

  const Problem& m_p;
  const BenchRequest& m_r;
  CheckContext m_ctx;
  BenchReport m_report;
  TempDir m_tmp{"kopt-bench"};
};

}  // namespace

Expected<BenchReport> run_bench(const Problem& problem, const BenchRequest& request, CheckContext ctx) {
  try {
    BenchRun run(problem, request, ctx);
    return run.run();
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("bench: ") + e.what()));
  }
}

json to_json(const BenchReport& r) {
  json variants = json::array();
  for (const auto& v : r.variants)
    variants.push_back({{"kernel", v.kernel},
                        {"params", v.point},
                        {"status", v.status},
                        {"error", v.error},
                        {"build_key", v.build.key},
                        {"arch", v.build.arch},
                        {"summary", to_json(v.summary)},
                        {"throttled_samples", v.throttled_samples},
                        {"gbps", v.gbps},
                        {"gflops", v.gflops},
                        {"pct_bandwidth_ceiling", v.pct_bandwidth_ceiling},
                        {"pct_compute_ceiling", v.pct_compute_ceiling},
                        {"floor_s", v.floor_s},
                        {"series", to_json(v.series)}});
  json j{{"schema_version", 1},
         {"command", "bench"},
         {"problem", r.problem},
         {"device", to_json(r.device)},
         {"toolkit", r.toolkit},
         {"options", to_json(r.options)},
         {"flush_bytes", r.flush_bytes},
         {"flush_method", r.flush_method},
         {"clocks_before", r.clocks_before},
         {"clocks_after", r.clocks_after},
         {"ceilings", r.ceilings_source},
         {"variants", variants},
         {"exit_code", r.exit_code()}};
  j["comparison"] = r.comparison ? to_json(*r.comparison) : json(nullptr);
  return j;
}

}  // namespace kopt
