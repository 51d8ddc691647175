// PythonRunner::bench: PyTorch baselines and Triton candidates prepared in their processes,
// sampled in rotation on kopt's schedule, and a candidate's events held against kopt's own
// clock and the device's idleness after its window.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/backend/sampling_rounds.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/launch.hpp"

namespace kopt {
using nlohmann::json;
using namespace std::chrono_literals;

namespace {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

BenchResult PythonRunner::bench(const BenchJob& job) {
  using Clock = std::chrono::steady_clock;
  BenchResult result;
  const BenchOptions& opt = job.options;
  auto fail = [&](const std::string& error) {
    result.status = RunStatus::launch_failed;
    result.error = error;
    return result;
  };
  TempDir after("kopt-python-bench");
  std::vector<SampledVariant> variants;
  variants.reserve(job.variants.size());
  // torch.compile's graph count after the compile, and the latest a sample reported.
  std::vector<int> graphs_prepared(job.variants.size(), -1), graphs_now(job.variants.size(), -1);
  // Where each variant runs, and the host's time to make one call of it (the worker's clock).
  std::vector<bool> on_gpu(job.variants.size(), false);
  std::vector<double> host_s(job.variants.size(), 0.0);
  auto graphs = [](const json& reply) {
    const json d = reply.value("dynamo", json());
    return d.is_object() ? d.value("graphs", -1) : -1;
  };
  for (const auto& v : job.variants)
    if (std::string why = tensor_map_refusal(v.args, "a Python kernel"); !why.empty())
      return fail(v.label + ": " + why);
  // A bench comes after the check: the references it kept on the device go back to it first.
  if (m_trusted.running()) (void)call({{"op", "forget_kept"}}, 60s, false);
  for (std::size_t i = 0; i < job.variants.size(); ++i) {
    Reply r = call({{"op", "prepare"}, {"id", i}, {"job", job_json(job.variants[i], after.path())}},
                   600s, is_candidate(job.variants[i].kind));
    if (!r.ok) return fail(job.variants[i].label + ": " + r.error);
    if (std::string why = wrong_device(r); !why.empty())
      return fail(job.variants[i].label + ": " + why);
    std::string label = job.variants[i].label;
    // A PyTorch baseline that fell back to ref.py's reference() (no baseline() or
    // setup_baseline()) says so: a reference may compute in higher precision.
    bool torch = job.variants[i].kind == ModuleKind::torch_eager ||
                 job.variants[i].kind == ModuleKind::torch_compile;
    if (std::string timed = r.result.value("timed", "");
        torch && timed != "baseline" && timed != "setup_baseline")
      label += " (" + timed + "())";
    variants.emplace_back(opt.rule).series.label = label;
    on_gpu[i] = r.result.value("device", std::string()).rfind("cuda", 0) == 0;
    host_s[i] = r.result.value("host_s", 0.0);
    graphs_prepared[i] = graphs(r.result);
    if (const json d = r.result.value("dynamo", json()); d.is_object())
      variants.back().series.graph_breaks = d.value("graph_breaks", -1);
  }
  std::int64_t flush =
      opt.mode == CacheMode::cold ? (opt.flush_bytes > 0 ? opt.flush_bytes : m_default_flush) : 0;
  result.flush_bytes = flush;
  result.flush_method = flush > 0 ? "write" : "";
  auto wall_start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - wall_start).count(); };
  std::string failure;
  std::vector<std::vector<double>> host_us(variants.size()), late_s(variants.size());
  auto take = [&](std::size_t i, std::uint32_t) -> std::optional<TakenSample> {
    // "hold": the GPU spins while the host makes the call, so that Python's own overhead
    // (dispatch, torch.compile's guards) stays out of the window, as the blocking kernel keeps
    // cuLaunchKernel out of it; the host's time is kept apart, like the launch overhead.
    Reply r =
        call({{"op", "sample"}, {"id", i}, {"flush_bytes", flush}, {"hold", opt.blocking_kernel}},
             120s, is_candidate(job.variants[i].kind));
    if (!r.ok) {
      failure = variants[i].series.label + ": " + r.error;
      return std::nullopt;
    }
    host_us[i].push_back(r.result.value("host_seconds", 0.0) * 1e6);
    late_s[i].push_back(r.result.value("late_seconds", 0.0));
    graphs_now[i] = graphs(r.result);
    return TakenSample{r.result.value("seconds", 0.0), false};
  };
  for (std::size_t i = 0; i < variants.size();
       ++i) {  // time-based warm-up, as the device timers do
    auto t0 = Clock::now();
    int n = 0;
    do {
      if (!take(i, 0)) return fail(failure);
      ++n;
    } while (std::chrono::duration<double>(Clock::now() - t0).count() < opt.warmup_s || n < 2);
    variants[i].series.warmup_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::vector<SampledVariant*> rotation;
  for (auto& v : variants) rotation.push_back(&v);
  bool ok = run_sampling_rounds(rotation, opt, take, elapsed);
  // A candidate's events against kopt's own clock, before the worker lets the variants go.
  for (std::size_t i = 0; ok && i < variants.size(); ++i) {
    const auto& samples = variants[i].series.samples_s;
    if (!is_candidate(job.variants[i].kind) || samples.empty() || !on_gpu[i]) continue;
    double median_s = median_of(samples);
    std::string why = late_work(median_s, median_of(late_s[i]));
    if (why.empty()) why = cross_check_clock(static_cast<int>(i), median_s, host_s[i]);
    if (!why.empty()) {
      failure = variants[i].series.label + ": " + why;
      ok = false;
    }
  }
  for (bool candidate : {false, true})
    if ((candidate ? m_candidate : m_trusted).running()) call({{"op", "release"}}, 60s, candidate);
  if (!ok) return fail(failure);
  if (std::any_of(job.variants.begin(), job.variants.end(),
                  [](const RunJob& v) { return is_candidate(v.kind); }))
    result.sandbox = m_sandbox;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    variants[i].series.launch_overhead_us = median_of(host_us[i]);
    variants[i].series.host_in_window = !opt.blocking_kernel;
    variants[i].series.wall_s = elapsed();
    if (graphs_prepared[i] >= 0 && graphs_now[i] >= 0)
      variants[i].series.recompiles = graphs_now[i] - graphs_prepared[i];
    result.series.push_back(std::move(variants[i].series));
  }
  return result;
}

std::string host_clock_disagreement(double reported_s, double per_call_s, double host_call_s) {
  if (per_call_s <= 0 || host_call_s >= 0.5 * per_call_s || reported_s >= 0.8 * per_call_s)
    return {};
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "its events reported %.1f us a call, and kopt's own clock measured %.1f us a call "
                "over back-to-back calls (of which the host took %.1f us): a timer that reports "
                "%.0f%% of the time that passed is not believed, and its numbers are not a result",
                reported_s * 1e6, per_call_s * 1e6, host_call_s * 1e6,
                100.0 * reported_s / per_call_s);
  return buf;
}

std::string late_work(double window_s, double late_s) {
  if (late_s <= 20e-6 + 0.1 * window_s) return {};
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the device was still busy %.1f us after the end of the timed window (%.1f us), "
                "in the median sample: the call returned with work it did not wait for (a side "
                "stream not joined to the current one?), which no timer sees; its numbers are "
                "not a result",
                late_s * 1e6, window_s * 1e6);
  return buf;
}

std::string PythonRunner::cross_check_clock(int id, double median_s, double host_s) {
  using Clock = std::chrono::steady_clock;
  // Enough calls for about 20 ms of work, so that the round trip is small beside it.
  int calls = static_cast<int>(std::clamp(0.02 / std::max(median_s, 1e-7), 3.0, 2000.0));
  // One call first, outside kopt's clock: what a first call does once (the allocator growing
  // its pool for a new output of GBs) is not the kernel's time, and three calls of 9 ms would
  // carry it (a 6.4 GB softmax of KernelBench read 79 % once, and passed on its next run).
  if (Reply once = call({{"op", "wall"}, {"id", id}, {"calls", 1}}, 120s, true); !once.ok)
    return once.error;
  auto t0 = Clock::now();
  if (Reply ping = call({{"op", "ping"}}, 60s, true); !ping.ok) return ping.error;
  double round_trip = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  Reply r = call({{"op", "wall"}, {"id", id}, {"calls", calls}}, 120s, true);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r.ok) return r.error;
  return host_clock_disagreement(median_s, (wall - round_trip) / calls, host_s);
}

}  // namespace kopt
