// `kopt bench PROBLEM` and `kopt ceilings`.
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "commands.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/bencher.hpp"
#include "kopt/engine/ceilings_store.hpp"
#include "kopt/engine/dispatcher.hpp"
#include "kopt/problem/loader.hpp"
#include "worker_pool.hpp"

namespace kopt::cli {
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

void print_bench(const BenchReport& r) {
  std::cout << fmt::format(
      "kopt bench {} · {} ({}) · {} L2{} · {}\n", r.problem, r.device.name, r.device.arch(),
      cache_mode_name(r.options.mode),
      r.flush_bytes ? fmt::format(" ({} flush of {} MiB)", r.flush_method, r.flush_bytes >> 20)
                    : "",
      r.toolkit);
  std::cout << "clocks before: " << clocks_text(r.clocks_before)
            << "\nclocks after:  " << clocks_text(r.clocks_after)
            << "\nceilings: " << r.ceilings_source
            << (r.compute_roof.rate > 0
                    ? fmt::format(" (%FLOP of {}: {:.1f} TFLOP/s)", r.compute_roof.name,
                                  r.compute_roof.rate / 1e12)
                    : std::string())
            << "\n\n";
  std::cout << fmt::format("{:<3} {:<34} {:>11} {:>23} {:>7} {:>6} {:>10} {:>6} {:>11} {:>6}  {}\n",
                           "", "variant", "median", "p10 .. p90", "noise", "n", "GB/s", "%BW",
                           "GFLOP/s", "%FLOP", "stop");
  char tag = 'A';
  for (const auto& v : r.variants) {
    std::string name = v.kernel + (v.point.empty() ? "" : " [" + point_to_string(v.point) + "]");
    if (v.status != "ok" && v.summary.n == 0) {
      std::cout << fmt::format("{:<3} {:<34} {}: {}\n", std::string(1, tag++), name, v.status,
                               v.error);
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
            : fmt::format("; outputs verified after {} poisoned sample(s){}",
                          check.poisoned_samples, check.last_checked ? " and the last launch" : "");
    std::cout << fmt::format(
        "    host launch {:.1f} us ({} the timed window); throttled samples {}; "
        "blocking-kernel timeouts {}{}\n",
        v.series.launch_overhead_us, v.series.host_in_window ? "inside" : "outside",
        v.throttled_samples, v.series.blocking_timeouts, verified);
    if (!v.device.empty()) std::cout << "    measured on " << v.device << "\n";
    for (const auto& f : v.flags) std::cout << "    flagged: " << flag_text(f) << "\n";
    for (const auto& r : v.reviews) std::cout << "    review: " << r << "\n";
    if (v.status != "ok") std::cout << "    " << v.status << ": " << v.error << "\n";
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

}  // namespace

int run_bench_command(const GlobalOptions& g, const BenchCliOptions& o) {
  ProblemSelection selection = o.sel;
  selection.allow_no_kernels = o.vs_torch;  // the baselines of a fresh import, before any kernel
  auto sel = load_selection(selection);
  if (!sel) return report_error(g, "bench", exit_code(sel.error().kind), sel.error().to_string());
  const Problem& problem = sel->problem;

  BenchRequest req;
  std::vector<std::string> kernels = o.sel.kernels;
  if (kernels.empty())
    for (const auto& k : problem.kernels) kernels.push_back(k.name);
  bool comparing = !o.sel.vs.empty() || o.vs_kernel;
  if (comparing) {
    if (kernels.size() != 1)
      return report_error(g, "bench", 2, "--vs compares one kernel: name it with --kernel");
    req.variants.push_back({kernels[0], sel->sets});
    auto b_sets = sel->sets;
    for (const auto& [k, v] : sel->vs) b_sets[k] = v;
    req.variants.push_back({o.vs_kernel.value_or(kernels[0]), b_sets});
    req.compare = true;
  } else {
    auto chosen = select_kernels(problem, kernels);
    if (!chosen) return report_error(g, "bench", 2, chosen.error().to_string());
    if (auto used = check_assignments_used(problem, *chosen, sel->sets, "--set"); !used)
      return report_error(g, "bench", 2, used.error().to_string());
    for (const KernelSpec* ks : *chosen)
      req.variants.push_back({ks->name, assignments_for(*ks, sel->sets)});
  }
  req.options.mode = o.mode == "hot" ? CacheMode::hot : CacheMode::cold;
  req.options.flush = o.flush == "write" ? FlushMethod::write : FlushMethod::read;
  req.options.warmup_s = o.warmup_s;
  req.options.blocking_kernel = o.blocking;
  req.options.verify_samples = o.verify_samples;
  req.options.rule.max_noise = o.max_noise_pct / 100.0;
  req.options.rule.min_samples = o.min_samples;
  req.options.rule.min_time_s = o.min_time_s;
  req.options.rule.max_time_s = o.max_time_s;
  req.threshold = o.threshold_pct / 100.0;
  req.check_first = o.check_first;
  req.vs_torch = o.vs_torch;
  req.arch = o.sel.arch;
  req.cache_root = cache_dir();
  if (g.verbose) req.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };

  auto pool = WorkerPool::open({o.gpus, o.cluster, o.sel.device, o.allow_mixed});
  if (!pool)
    return report_error(g, "bench", exit_code(pool.error().kind), pool.error().to_string());
  std::vector<CheckContext> workers = (*pool)->contexts();
  std::vector<std::string> notes;
  if (workers.size() > 1) {
    auto devices = worker_devices(workers, o.allow_mixed, notes);
    if (!devices)
      return report_error(g, "bench", exit_code(devices.error().kind), devices.error().to_string());
    std::cerr << "kopt bench: " << (*pool)->description() << "\n";
  }
  auto report = run_bench(problem, req, workers, notes);
  for (const auto& n : notes) std::cerr << "kopt bench: note: " << n << "\n";
  if (!report)
    return report_error(g, "bench", exit_code(report.error().kind), report.error().to_string());
  if (g.json)
    std::cout << to_json(*report).dump(2) << "\n";
  else
    print_bench(*report);
  return report->exit_code();
}

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

}  // namespace kopt::cli
