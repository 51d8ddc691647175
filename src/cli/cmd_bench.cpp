// `kopt bench PROBLEM` and `kopt ceilings`.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "commands.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "kopt/evaluate/bench.hpp"
#include "kopt/evaluate/ceilings_store.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::cli {
using evaluate::BenchReport;
using evaluate::ensure_ceilings;
using evaluate::StoredCeilings;
namespace {
using nlohmann::json;

std::string time_text(double s) {
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.2f} us", s * 1e6);
}

std::string rate_text(double v, const std::string& unit) {
  if (v >= 1e12) return fmt::format("{:.1f} T{}", v / 1e12, unit);
  if (v >= 1e9) return fmt::format("{:.1f} G{}", v / 1e9, unit);
  return fmt::format("{:.3g} {}", v, unit);
}

// The flush as it was done; one that is not the one asked for says so, with the reason.
std::string flush_text(const BenchReport& r) {
  if (!r.flush_bytes) return "";
  if (r.flush_method == flush_method_name(FlushMethod::evict))
    return fmt::format(" (its tensors' {} evicted from the host's caches before each sample)",
                       human_bytes(static_cast<std::uint64_t>(r.flush_bytes)));
  std::string text = fmt::format(" ({} flush of {} MiB", r.flush_method, r.flush_bytes >> 20);
  if (std::string_view asked = flush_method_name(r.options.flush); r.flush_method != asked)
    text += fmt::format(", not the {} flush asked for: {}", asked,
                        r.device.backend == "opencl"
                            ? "the OpenCL timer flushes by rewriting its buffer"
                            : "the read-flush kernel could not be built for this device");
  return text + ")";
}

void print_bench(const BenchReport& r) {
  std::cout << fmt::format("kopt bench {} · {} ({}) · {} L2{} · {}\n", r.problem, r.device.name,
                           r.device.arch(), cache_mode_name(r.options.mode), flush_text(r),
                           r.toolkit);
  std::cout << "clocks before: " << clocks_text(r.clocks_before)
            << "\nclocks after:  " << clocks_text(r.clocks_after)
            << "\nceilings: " << r.ceilings_source
            << (r.compute_roof.rate > 0
                    ? fmt::format(" (%FLOP of {}: {:.1f} TFLOP/s)", r.compute_roof.name,
                                  r.compute_roof.rate / 1e12)
                    : std::string())
            << (r.sandbox.empty() ? std::string() : "\nsandbox: " + r.sandbox) << "\n\n";
  std::cout << fmt::format("{:<3} {:<34} {:>11} {:>23} {:>7} {:>6} {:>10} {:>6} {:>11} {:>6}  {}\n",
                           "", "variant", "median", "p10 .. p90", "noise", "n", "GB/s", "%BW",
                           "GFLOP/s", "%FLOP", "stop");
  char tag = 'A';
  for (const auto& v : r.variants) {
    std::string name = v.kernel + (v.point.empty() ? "" : " [" + point_to_string(v.point) + "]");
    if (v.status != VariantStatus::ok && v.summary.n == 0) {
      std::cout << fmt::format("{:<3} {:<34} {}: {}\n", std::string(1, tag++), name,
                               name_of(v.status), v.error);
      continue;
    }
    const Summary& s = v.summary;
    // Without a cost formula a rate is unknown, never 0.
    std::string gbps = r.cost.bytes ? fmt::format("{:.1f}", v.gbps) : "unknown";
    std::string gflops = r.cost.flops ? fmt::format("{:.1f}", v.gflops) : "unknown";
    std::cout << fmt::format(
        "{:<3} {:<34} {:>11} {:>23} {:>6.2f}% {:>6} {:>10} {:>6} {:>11} {:>6}  {}{}\n",
        std::string(1, tag++), name, time_text(s.median),
        time_text(s.p10) + " .. " + time_text(s.p90), 100 * s.rel_noise, s.n, gbps,
        v.pct_bandwidth_ceiling > 0 ? fmt::format("{:.1f}%", v.pct_bandwidth_ceiling) : "-", gflops,
        v.pct_compute_ceiling > 0 ? fmt::format("{:.1f}%", v.pct_compute_ceiling) : "-",
        stop_reason_name(v.series.stop),
        v.series.graph ? fmt::format(", graph x{}", v.series.batch) : "");
    const SampleVerification& check = v.series.verification;
    std::string verified =
        !check.enabled
            ? ""
            : fmt::format(
                  "; outputs verified after {} poisoned sample(s){}{}{}{}", check.poisoned_samples,
                  check.reset_samples > 0
                      ? fmt::format(" (inouts set back and compared on {})", check.reset_samples)
                      : "",
                  check.last_checked ? " and the last launch" : "",
                  check.device_compared > 0
                      ? fmt::format(", {} of them by a keyed hash on the device ({:.1f} ms)",
                                    check.device_compared, 1e3 * check.verify_s)
                      : "",
                  check.compared_on_device > 0 || check.read_back_bytes > 0
                      ? fmt::format("; {} compared on the device, {} read back",
                                    check.compared_on_device, human_bytes(check.read_back_bytes))
                      : "");
    std::cout << fmt::format(
        "    host launch {:.1f} us ({} the timed window); throttled samples {}; "
        "blocking-kernel timeouts {}{}\n",
        v.series.launch_overhead_us, v.series.host_in_window ? "inside" : "outside",
        v.throttled_samples, v.series.blocking_timeouts, verified);
    if (!v.device.empty()) std::cout << "    measured on " << v.device << "\n";
    for (const auto& f : v.flags) std::cout << "    flagged: " << flag_text(f) << "\n";
    for (const auto& r : v.reviews) std::cout << "    review: " << r << "\n";
    // A number obtained in a lower precision than the tensors', where kopt.toml allows it.
    if (v.precision && v.precision->lowest && v.precision->declared)
      std::cout << "    precision: " << v.precision->explain() << "\n";
    if (v.status != VariantStatus::ok)
      std::cout << "    " << name_of(v.status) << ": " << v.error << "\n";
  }
  if (r.comparison) {
    const Comparison& c = *r.comparison;
    std::cout << fmt::format(
        "\nA / B time ratio {:.4f}, {:.0f}% CI [{:.4f}, {:.4f}] over {} interleaved pairs: A is {}"
        " (threshold {:.1f}%)\n",
        c.ratio, 100 * c.confidence, c.ci_low, c.ci_high, c.pairs, verdict_name(c.verdict),
        100 * c.threshold);
  }
}

struct BenchCliOptions {
  ProblemSelection sel;
  std::optional<std::string> vs_kernel;
  std::string mode = "cold";
  std::string flush = "read";
  std::string verify_on = "auto";
  double max_noise_pct = 100 * StoppingRule{}.max_noise;
  std::size_t min_samples = StoppingRule{}.min_samples;
  double min_time_s = StoppingRule{}.min_time_s;
  double max_time_s = evaluate::k_bench_max_time_s;
  double warmup_s = BenchOptions{}.warmup_s;
  double threshold_pct = 1.0;
  bool check_first = true;
  bool blocking = true;
  bool vs_torch = false;
  bool verify_samples = true;
  std::string gpus;     // --gpus all|N,M,...: variants measured one per device
  std::string cluster;  // --cluster ray|ray:ADDRESS: one worker per device of a Ray cluster
  bool allow_mixed = false;
  ShapeFlags axes;  // --axis NAME=V1,V2,...
};

// One shape: the report printed (text, or JSON when `doc` is null) and put in *doc; the exit
// code. An error goes into *doc too, where there is one.
int bench_one(const GlobalOptions& g, const BenchCliOptions& o, ProblemSelection selection,
              json* doc) {
  auto report_error = [doc](const GlobalOptions& gl, const std::string& command, int code,
                            const std::string& message) {
    return cli::report_error(gl, command, code, message, doc);
  };
  selection.allow_no_kernels = o.vs_torch;  // the baselines of a fresh import, before any kernel
  auto sel = load_selection(selection);
  if (!sel) return report_error(g, "bench", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;

  std::vector<evaluate::Candidate> candidates;
  std::vector<std::string> kernels = o.sel.kernels;
  if (kernels.empty())
    for (const auto& k : problem.kernels) kernels.push_back(k.name);
  bool comparing = !o.sel.vs.empty() || o.vs_kernel;
  if (comparing) {
    if (kernels.size() != 1)
      return report_error(g, "bench", 2, "--vs compares one kernel: name it with --kernel");
    // --set applies to each side's params (a library kernel beside a tuned one has none);
    // --vs names params of B's kernel, checked there.
    const std::string b_kernel = o.vs_kernel.value_or(kernels[0]);
    auto chosen = select_kernels(problem, {kernels[0], b_kernel});
    if (!chosen) return report_error(g, "bench", 2, chosen.error().to_string());
    if (auto used = check_assignments_used(problem, *chosen, sel->sets, "--set"); !used)
      return report_error(g, "bench", 2, used.error().to_string());
    auto b_sets = assignments_for(*chosen->back(), sel->sets);
    for (const auto& [k, v] : sel->vs) b_sets[k] = v;
    candidates = {{kernels[0], assignments_for(*chosen->front(), sel->sets)}, {b_kernel, b_sets}};
  } else {
    auto chosen = select_kernels(problem, kernels);
    if (!chosen) return report_error(g, "bench", 2, chosen.error().to_string());
    if (auto used = check_assignments_used(problem, *chosen, sel->sets, "--set"); !used)
      return report_error(g, "bench", 2, used.error().to_string());
    for (const KernelSpec* ks : *chosen)
      candidates.push_back({ks->name, assignments_for(*ks, sel->sets)});
  }
  evaluate::Rigour rigour = evaluate::Rigour::report();
  BenchOptions& t = rigour.timing;
  t.mode = o.mode == "hot" ? CacheMode::hot : CacheMode::cold;
  t.flush = o.flush == "write" ? FlushMethod::write : FlushMethod::read;
  t.verify_on = parse_verify_on(o.verify_on);
  t.warmup_s = o.warmup_s;
  t.blocking_kernel = o.blocking;
  t.verify_samples = o.verify_samples;
  t.rule.max_noise = o.max_noise_pct / 100.0;
  t.rule.min_samples = o.min_samples;
  t.rule.min_time_s = o.min_time_s;
  t.rule.max_time_s = o.max_time_s;
  rigour.threshold = o.threshold_pct / 100.0;
  rigour.check = o.check_first;

  auto pool =
      evaluate::WorkerPool::open({device_family(), o.gpus, o.cluster, o.sel.device, o.allow_mixed});
  if (!pool)
    return report_error(g, "bench", exit_code(pool.error().kind), pool.error().to_string());
  evaluate::EvaluatorOptions eo;
  eo.arch = o.sel.arch;
  eo.cache_root = cache_dir();
  eo.allow_mixed = o.allow_mixed;
  if (g.verbose) eo.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };
  evaluate::Evaluator ev(problem, (*pool)->contexts(), eo);
  std::vector<std::string> notes;
  bool several = ev.workers() > 1;
  if (several) {
    auto devices = ev.devices();
    if (!devices)
      return report_error(g, "bench", exit_code(devices.error().kind), devices.error().to_string());
    std::cerr << "kopt bench: " << (*pool)->description() << "\n";
  }
  Expected<evaluate::BenchReport> report = Unexpected(internal_error("bench: nothing ran"));
  if (comparing) {
    if (several) notes.push_back("a comparison runs on one device: all of it on worker 0");
    report = ev.compare(candidates[0], candidates[1], rigour);
  } else if (o.vs_torch) {
    if (several)
      notes.push_back("the PyTorch baselines are timed beside the kernels: all on worker 0");
    report = ev.with_baselines(candidates, rigour);
  } else if (several && candidates.size() > 1) {
    report = ev.one_per_worker(candidates, rigour);
  } else {
    report = ev.side_by_side(candidates, rigour);
  }
  for (auto& n : ev.notes()) notes.push_back(std::move(n));
  for (const auto& n : notes) std::cerr << "kopt bench: note: " << n << "\n";
  if (!report)
    return report_error(g, "bench", exit_code(report.error().kind), report.error().to_string());
  if (doc) *doc = to_json(*report);
  if (g.json && !doc)
    std::cout << to_json(*report).dump(2) << "\n";
  else if (!g.json)
    print_bench(*report);
  return report->exit_code();
}

int run_bench_command(const GlobalOptions& g, const BenchCliOptions& o) {
  return run_over_shapes(
      g, "bench", o.sel, o.axes,
      [&](ProblemSelection& s, json* doc) { return bench_one(g, o, s, doc); }, bench_summary);
}

struct CeilingsCliOptions {
  bool refresh = false;
  int device = 0;
};

int run_ceilings_command(const GlobalOptions& g, const CeilingsCliOptions& o) {
  TempDir tmp("kopt-worker");
  WorkerClient worker(worker_options(o.device, tmp.path()));
  auto ensured = ensure_ceilings(cache_dir(), worker, o.refresh);
  if (!ensured)
    return report_error(g, "ceilings", exit_code(ensured.error().kind), ensured.error().message);
  auto [stored_value, cached] = *ensured;
  const StoredCeilings* stored = &stored_value;
  const DeviceInfo* device = &stored->device;
  if (g.json) {
    json j = to_json(*stored);
    j["command"] = "ceilings";
    j["cached"] = cached;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("kopt ceilings · {} ({}) · measured {}{}\n", device->name,
                           device->arch(), stored->measured_at,
                           cached ? " (cached; --refresh measures again)" : "");
  std::cout << "clocks before: " << clocks_text(stored->result.clocks_before)
            << "\nclocks after:  " << clocks_text(stored->result.clocks_after) << "\n\n";
  for (const auto& c : stored->result.ceilings) {
    if (!c.error.empty())
      std::cout << fmt::format("{:<12} missing: {}\n", c.name, c.error);
    else
      std::cout << fmt::format("{:<12} best {:>12}  median {:>12}  ({})\n", c.name,
                               rate_text(c.best, c.unit), rate_text(c.median, c.unit), c.method);
  }
  return 0;
}

}  // namespace

std::vector<Command> bench_commands(const GlobalRef& g) {
  auto o = std::make_shared<BenchCliOptions>();
  Command bench{.path = {"bench"},
                .help = "time kernels (cold or hot cache), or compare two with --vs",
                .run = [g, o] { return run_bench_command(*g, *o); },
                .storage = o};
  add_selection(bench, o->sel, "compare with the same point changed by NAME=VALUE (repeatable)");
  add_axes(bench, o->axes);
  bench.options.insert(
      bench.options.end(),
      {{.names = "--vs-kernel",
        .help = "compare with another kernel of the problem",
        .target = &o->vs_kernel},
       {.names = "--mode",
        .help = "cold (L2 flushed before each sample) or hot",
        .target = &o->mode,
        .choices = {"cold", "hot"}},
       {.names = "--flush",
        .help = "cold mode: read (clean L2) or write (dirty L2) the flush buffer",
        .target = &o->flush,
        .choices = {"read", "write"}},
       verify_on_option(&o->verify_on),
       {.names = "--max-noise",
        .help = "stop when the relative noise is below this (%)",
        .target = &o->max_noise_pct,
        .positive = true},
       {.names = "--min-samples",
        .help = "at least this many samples, whatever the time cap (3 or more: a spread needs "
                "them)",
        .target = &o->min_samples,
        .range = {{3, 1000000}}},
       {.names = "--min-time",
        .help = "at least this much measured GPU time (s)",
        .target = &o->min_time_s,
        .non_negative = true},
       {.names = "--max-time",
        .help = "time cap of the timed launches per bench (s); warm-up and verification are "
                "not counted, and the minimum sample count is taken past it",
        .target = &o->max_time_s,
        .positive = true},
       {.names = "--warmup",
        .help = "warm-up per variant (s)",
        .target = &o->warmup_s,
        .non_negative = true},
       {.names = "--threshold",
        .help = "difference below which A and B are the same (%)",
        .target = &o->threshold_pct,
        .positive = true},
       {.names = "--no-check",
        .help = "time without checking correctness first",
        .target = &o->check_first,
        .negates = true},
       {.names = "--vs-torch",
        .help = "also time the PyTorch reference (ref.py), eager and through torch.compile",
        .target = &o->vs_torch},
       {.names = "--no-blocking-kernel",
        .help = "do not hold the stream while queueing a sample",
        .target = &o->blocking,
        .negates = true},
       {.names = "--no-verify-samples",
        .help = "do not poison outputs before random timed samples and compare them with an "
                "untimed launch's",
        .target = &o->verify_samples,
        .negates = true},
       {.names = "--gpus",
        .help = "all, or N,M,...: one worker per device, the variants measured one per worker "
                "(each names its device); a comparison (--vs) stays on one device",
        .target = &o->gpus},
       {.names = "--cluster",
        .help = "ray, or ray:ADDRESS: as --gpus over the devices of a Ray cluster",
        .target = &o->cluster},
       {.names = "--allow-mixed",
        .help = "with --gpus or --cluster: devices of different models",
        .target = &o->allow_mixed}});

  auto c = std::make_shared<CeilingsCliOptions>();
  Command ceilings{.path = {"ceilings"},
                   .help = "measure the device's real ceilings (cached per device)",
                   .run = [g, c] { return run_ceilings_command(*g, *c); },
                   .storage = c};
  ceilings.options = {
      {.names = "--refresh", .help = "measure again even if cached", .target = &c->refresh},
      {.names = "--device",
       .help = "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)",
       .target = &c->device}};
  return {bench, ceilings};
}

}  // namespace kopt::cli
