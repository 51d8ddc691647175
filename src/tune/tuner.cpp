#include "kopt/engine/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <optional>

#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/build_queue.hpp"
#include "kopt/core/parallel.hpp"
#include "kopt/engine/dispatcher.hpp"
#include "kopt/engine/roofs.hpp"
#include "kopt/engine/variant_jobs.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {
using nlohmann::json;

int TuneReport::exit_code() const {
  return stages.champion ? 0 : 1;
}

double TuneReport::configs_per_min() const {
  return wall_s > 0 ? 60.0 * double(stages.search.history.size()) / wall_s : 0.0;
}

BenchOptions screen_options(const BenchOptions& full, std::size_t samples) {
  BenchOptions o = full;
  o.warmup_s = 0;  // the timer still launches twice before the first sample
  o.rule.min_samples = std::max<std::size_t>(samples, 1);
  o.rule.max_samples = o.rule.min_samples;
  o.rule.min_time_s = 0;
  o.rule.max_noise = 0;  // never stops early on noise: every candidate gets the same budget
  o.rule.plateau_window = o.rule.max_samples + 1;
  return o;
}

CandidateFootprint candidate_footprint(const Problem& p) {
  return {problem_tensor_bytes(p), problem_tensor_bytes(p, Role::output)};
}

std::size_t batch_for_memory(std::size_t wanted, const CandidateFootprint& per,
                             const std::vector<DeviceInfo>& devices) {
  wanted = std::max<std::size_t>(wanted, 1);
  if (devices.empty()) return wanted;
  std::uintmax_t fits = wanted;
  // Each device holds its share of the batch (split_ranges: within one candidate of even).
  const std::uintmax_t n = devices.size();
  // A holder (a device, or a machine shared by `sharers` of them) with `budget` bytes keeps a
  // quarter of it for the candidates of those devices.
  auto cap = [&](std::int64_t budget, std::uintmax_t bytes, std::uintmax_t sharers) {
    if (budget <= 0 || bytes == 0) return;
    std::uintmax_t holds = static_cast<std::uintmax_t>(budget) / 4 / bytes;
    fits = std::min(fits, holds * n / sharers);
  };
  struct Machine {
    std::int64_t available = 0;  // the least any of its workers reported
    std::uintmax_t bytes = 0;    // host bytes a candidate takes there
    std::uintmax_t devices = 0;
  };
  std::map<std::string, Machine> machines;
  for (const auto& d : devices) {
    if (!d.is_host_cpu()) cap(d.memory_bytes, per.device_bytes, 1);
    Machine& m = machines[d.machine];
    if (d.host_memory_available_bytes > 0)
      m.available = m.available > 0 ? std::min(m.available, d.host_memory_available_bytes)
                                    : d.host_memory_available_bytes;
    m.bytes = std::max(m.bytes, per.host_bytes + (d.is_host_cpu() ? per.device_bytes : 0));
    ++m.devices;
  }
  for (const auto& [name, m] : machines) cap(m.available, m.bytes, m.devices);
  return std::clamp<std::size_t>(static_cast<std::size_t>(fits), 1, wanted);
}

namespace {

std::map<std::string, std::int64_t> as_sets(const ParamPoint& p) {
  return {p.begin(), p.end()};
}

// The stages' lab on the device: kopt bench over a batch of one kernel's points.
class BenchTuneLab final : public TuneLab {
 public:
  // One context per device: screening batches are split over them; confirmation runs on the
  // first, so that every comparison is made on one device.
  BenchTuneLab(const Problem& p, const KernelSpec& k, const TuneRequest& r,
               const std::vector<CheckContext>& ctxs, const DeviceInfo& device)
      : m_p(p),
        m_k(k),
        m_r(r),
        m_ctxs(ctxs),
        m_ctx(ctxs.front()),
        m_device(device),
        m_arch(r.arch.value_or(device.arch())),
        m_dispatch(ctxs.size()) {
    if (m_ctx.compiler.concurrent())
      m_queue = std::make_unique<BuildQueue>(m_ctx.compiler, m_r.cache_root / "builds", m_r.jobs);
  }

  // Builds announced batches on a pool while earlier ones are checked and timed on the device
  // (the search announces a few batches ahead); screen() waits for its own builds only.
  void prefetch(const std::vector<ParamPoint>& points) override {
    if (!m_queue) return;  // a worker's compiler: one request at a time, in the batch itself
    m_queue->add(requests_for(points));
  }

  std::vector<Evaluation> screen(const std::vector<ParamPoint>& points,
                                 StageTimes& times) override {
    std::vector<Evaluation> out(points.size());
    if (m_first) first_batch(points, times);
    if (m_queue)
      times.build_s +=
          m_queue->wait(requests_for(points));  // what did not overlap the device's work
    // One slice per live worker, handed out by the dispatcher: a slice whose worker is lost
    // is screened again on another. Each phase's time is the longest slice's.
    auto ranges = split_ranges(points.size(), std::max<std::size_t>(1, m_dispatch.live()));
    std::vector<StageTimes> slice_times(ranges.size());
    std::vector<std::optional<Expected<BenchReport>>> reports(ranges.size());
    std::vector<int> ran_on(ranges.size(), -1);
    m_dispatch.run(
        ranges.size(),
        [&](std::size_t t, std::size_t w) {
          std::vector<ParamPoint> slice(points.begin() + ranges[t].first,
                                        points.begin() + ranges[t].second);
          slice_times[t] = {};
          auto b = bench(slice, m_r.screen, slice_times[t], m_ctxs[w], /*screening=*/true);
          if (auto lost = lost_after(b, m_ctxs[w].worker)) return DispatchOutcome{true, *lost};
          reports[t] = std::move(b);
          ran_on[t] = static_cast<int>(w);
          return DispatchOutcome{};
        },
        [&](std::size_t t, const std::string& why) {
          reports[t] = Unexpected(environment_error(why));
        });
    StageTimes longest;
    for (const auto& t : slice_times) {
      longest.build_s = std::max(longest.build_s, t.build_s);
      longest.check_s = std::max(longest.check_s, t.check_s);
      longest.measure_s = std::max(longest.measure_s, t.measure_s);
      longest.other_s = std::max(longest.other_s, t.other_s);
    }
    times += longest;
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      const Expected<BenchReport>& b = *reports[d];
      for (std::size_t i = ranges[d].first; i < ranges[d].second; ++i) {
        Evaluation& e = out[i];
        e.point = points[i];
        e.device = ran_on[d];
        const BenchVariant* v = outcome(b, i - ranges[d].first, e.ok, e.failure);
        if (!v) continue;
        e.cost = v->summary.median;
        e.cost_low = v->summary.median_low;
        e.cost_high = v->summary.median_high;
        e.build_s =
            v->build.compile_ms / 1000;  // its compile's, in this run or (cached) an earlier one
        e.wall_s = b->wall_s / double(ranges[d].second - ranges[d].first);
        m_r.log((e.ok ? "  " : "  FAILED ") + point_to_string(e.point) +
                (e.ok ? "" : ": " + e.failure));
      }
    }
    return out;
  }

  // On the first live worker, so that every confirmed time comes from one device: when that
  // worker is lost, the confirmation starts again on the next.
  std::vector<Confirmed> confirm(const std::vector<ParamPoint>& points,
                                 StageTimes& times) override {
    std::vector<Confirmed> out(points.size());
    m_r.log("confirming " + std::to_string(points.size()) +
            " candidate(s) with the full measurement");
    // Side by side in groups of k_group (a comparison of many in one job drifts less, one of
    // hundreds would hold all their buffers at once).
    constexpr std::size_t k_group = 8;
    for (;;) {
      auto live = m_dispatch.live_workers();
      if (live.empty()) {
        for (std::size_t i = 0; i < points.size(); ++i)
          out[i] = Confirmed{points[i], 0, false, "no live worker left to confirm it", {}};
        return out;
      }
      std::size_t w = live.front();
      bool restarted = false;
      for (std::size_t first = 0; first < points.size() && !restarted; first += k_group) {
        std::vector<ParamPoint> group(points.begin() + first,
                                      points.begin() + std::min(points.size(), first + k_group));
        auto b = bench(group, m_r.bench, times, m_ctxs[w]);
        if (auto lost = lost_after(b, m_ctxs[w].worker)) {
          m_dispatch.retire(w, *lost);
          restarted = true;
          break;
        }
        for (std::size_t i = 0; i < group.size(); ++i) {
          Confirmed& c = out[first + i];
          c.point = group[i];
          if (const BenchVariant* v = outcome(b, i, c.ok, c.failure)) c.summary = v->summary;
        }
      }
      if (!restarted) {
        m_confirmed_on = w;
        return out;
      }
    }
  }

  // Where confirmation (and the final comparison) ran: the first live worker.
  std::size_t confirmed_on() const { return m_confirmed_on; }
  const CheckContext& context(std::size_t w) const { return m_ctxs[w]; }
  std::vector<std::string> lost_notes() const { return m_dispatch.notes(); }

 private:
  // Variant i of a bench run: ok, or why not (the run's own error when it failed as a whole).
  static const BenchVariant* outcome(const Expected<BenchReport>& b, std::size_t i, bool& ok,
                                     std::string& failure) {
    ok = false;
    if (!b) {
      failure = b.error().message;
      return nullptr;
    }
    const BenchVariant& v = b->variants.at(i);
    ok = v.status == "ok";
    if (!ok)
      failure = v.status + (v.error.empty() ? "" : ": " + v.error.substr(0, v.error.find('\n')));
    return &v;
  }

  // On a fresh cache the roofs are measured on first use, by the worker, on the device: while
  // the first batch builds on the pool (the device has nothing else to do then).
  void first_batch(const std::vector<ParamPoint>& points, StageTimes& times) {
    m_first = false;
    if (!m_ctx.compiler.concurrent()) return;  // its builds would need the worker too
    auto t0 = std::chrono::steady_clock::now();
    auto roofs = std::async(std::launch::async, [this] {
      (void)resolve_roofs(m_r.cache_root, m_device, worker_ceilings(m_ctx.worker), m_r.log);
    });
    BuildCache cache(m_ctx.compiler, m_r.cache_root / "builds");
    (void)cache.build_all(requests_for(points), m_r.jobs);
    auto built = std::chrono::steady_clock::now();
    roofs.get();
    auto now = std::chrono::steady_clock::now();
    times.build_s += std::chrono::duration<double>(built - t0).count();
    times.other_s +=
        std::chrono::duration<double>(now - built).count();  // the roofs, past the builds
  }

  std::vector<CompileRequest> requests_for(const std::vector<ParamPoint>& points) const {
    std::vector<CompileRequest> out;
    for (const auto& p : points) out.push_back(compile_request(m_p, m_k, p, m_arch));
    return out;
  }

  // Screening ranks and is never reported as a result: it runs without secret-seed samples,
  // which the confirmation of every candidate that may win runs (output_verifier.hpp).
  Expected<BenchReport> bench(const std::vector<ParamPoint>& points, const BenchOptions& options,
                              StageTimes& times, CheckContext ctx, bool screening = false) {
    std::vector<BenchVariantSpec> specs;
    for (const auto& p : points) specs.push_back({m_k.name, as_sets(p)});
    // The time cap is the timing job's wall time and its candidates take turns: n of them
    // get n caps, so each gets what it would get alone.
    BenchOptions scaled = options;
    scaled.rule.max_time_s *= double(std::max<std::size_t>(points.size(), 1));
    BenchRequest req =
        bench_request(std::move(specs), false, scaled, m_r.threshold, m_r.arch, m_r.cache_root);
    req.time_the_rest = true;    // a failed candidate costs no one else its measurement
    req.check_in_timing = true;  // one job checks and times a batch where it can
    req.secret_samples = !screening;
    req.jobs = m_r.jobs;
    req.log = m_r.log;
    auto b = run_bench(m_p, req, ctx);
    if (b) {
      StageTimes t{b->build_s, b->check_s, b->measure_s, 0};
      t.other_s = std::max(0.0, b->wall_s - t.total());
      times += t;
    }
    return b;
  }

  const Problem& m_p;
  const KernelSpec& m_k;
  const TuneRequest& m_r;
  std::vector<CheckContext> m_ctxs;
  CheckContext m_ctx;  // the first device's: confirmation, roofs, the compiler
  DeviceInfo m_device;
  std::string m_arch;   // what the prefetched builds are for: what run_bench builds for
  bool m_first = true;  // no batch screened yet
  Dispatcher m_dispatch;
  std::size_t m_confirmed_on = 0;
  std::unique_ptr<BuildQueue> m_queue;  // announced batches' builds; none for a worker's compiler
};

}  // namespace

Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request,
                              CheckContext ctx) {
  return run_tune(problem, request, std::vector<CheckContext>{ctx});
}

Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request,
                              const std::vector<CheckContext>& ctxs) {
  auto t0 = std::chrono::steady_clock::now();
  if (ctxs.empty()) return Unexpected(internal_error("tune: no device to run on"));
  const KernelSpec* k = problem.find_kernel(request.kernel);
  if (!k)
    return Unexpected(
        bad_input("no kernel named '" + request.kernel + "'", problem.spec_path.string()));
  if (k->params.empty())
    return Unexpected(bad_input("kernel '" + k->name + "' has no params to tune",
                                problem.spec_path.string(), k->where.line,
                                k->where.field + ".params"));
  auto def = resolve_point(problem, *k, request.fixed);
  if (!def) return Unexpected(def.error());
  TuneReport report;
  report.problem = problem.name;
  report.kernel = k->name;
  report.default_point = *def;
  auto devices = worker_devices(ctxs, request.allow_mixed, report.device_notes);
  if (!devices) return Unexpected(devices.error());
  report.devices = *devices;
  report.jobs = std::max(1u, request.jobs);

  SearchSpace space = SearchSpace::from_kernel(*k, problem.dim_scope());
  for (auto& [name, values] : space.params)  // --set holds a param at one value
    if (auto it = request.fixed.find(name); it != request.fixed.end()) values = {it->second};
  report.space_size = space.size();

  SearchOptions so = request.search;
  so.start.insert(so.start.begin(), *def);
  so.batch = report.batch =
      batch_for_memory(so.batch, candidate_footprint(problem), report.devices);
  BenchTuneLab lab(problem, *k, request, ctxs, report.device());
  report.stages = run_two_stage(space, lab, so, request.confirm);

  auto c0 = std::chrono::steady_clock::now();
  const auto& champion = report.stages.champion;
  if (champion && champion->point != *def) {
    auto cmp = run_bench(
        problem,
        bench_request({{k->name, as_sets(champion->point)}, {k->name, as_sets(*def)}}, true,
                      request.bench, request.threshold, request.arch, request.cache_root),
        lab.context(lab.confirmed_on()));
    if (cmp) report.final_comparison = *cmp;
  }
  report.confirmed_on = lab.confirmed_on();
  for (auto& n : lab.lost_notes()) report.device_notes.push_back(std::move(n));
  auto now = std::chrono::steady_clock::now();
  report.compare_s = std::chrono::duration<double>(now - c0).count();
  report.wall_s = std::chrono::duration<double>(now - t0).count();
  return report;
}

namespace {
json gpus_json(const std::vector<DeviceInfo>& devices) {
  json out = json::array();
  for (const auto& d : devices) {
    json g{{"ordinal", d.ordinal},
           {"name", d.name},
           {"pci_bus_id", d.pci_bus_id},
           {"clocks", d.clocks}};
    if (!d.host.empty()) g["host"] = d.host;
    out.push_back(g);
  }
  return out;
}
}  // namespace

json to_json(const TuneReport& r) {
  const TwoStageResult& s = r.stages;
  json confirmed = json::array();
  for (const auto& c : s.confirmed) confirmed.push_back(to_json(c));
  json j{{"schema_version", 2},
         {"command", "tune"},
         {"problem", r.problem},
         {"kernel", r.kernel},
         {"device", r.device().name},
         {"gpus", gpus_json(r.devices)},
         {"gpu_notes", r.device_notes},
         {"confirmed_on", r.confirmed_on},
         {"space_size", r.space_size},
         {"default_point", r.default_point},
         {"jobs", r.jobs},
         {"batch", r.batch},
         {"search", to_json(s.search)},
         {"confirmed", confirmed},
         {"champion", s.champion ? to_json(*s.champion) : json(nullptr)},
         {"times",
          {{"screening", to_json(s.screening)},
           {"confirmation", to_json(s.confirmation)},
           {"final_comparison_s", r.compare_s},
           // the search's own work between batches, then kopt's start (device, space) and exit
           {"search_s", std::max(0.0, s.wall_s - s.screening.total() - s.confirmation.total())},
           {"setup_s", std::max(0.0, r.wall_s - s.wall_s - r.compare_s)},
           {"wall_s", r.wall_s}}},
         {"configs_per_min", r.configs_per_min()}};
  j["final_comparison"] = r.final_comparison && r.final_comparison->comparison
                              ? to_json(*r.final_comparison)["comparison"]
                              : json(nullptr);
  return j;
}

}  // namespace kopt
