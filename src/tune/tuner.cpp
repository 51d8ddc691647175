#include "kopt/tune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <optional>

#include "kopt/core/parallel.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::tune {
using nlohmann::json;

int TuneReport::exit_code() const {
  return stages.champion ? 0 : 1;
}

double TuneReport::configs_per_min() const {
  return wall_s > 0 ? 60.0 * double(stages.search.history.size()) / wall_s : 0.0;
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

using evaluate::BenchReport;
using evaluate::BenchVariant;
using evaluate::Candidate;
using evaluate::Rigour;

std::map<std::string, std::int64_t> as_sets(const ParamPoint& p) {
  return {p.begin(), p.end()};
}

// The stages' lab on the devices: the evaluator over batches of one kernel's points.
class EvaluatorTuneLab final : public TuneLab {
 public:
  EvaluatorTuneLab(evaluate::Evaluator& ev, const KernelSpec& k, const TuneRequest& r)
      : m_ev(ev), m_k(k), m_full(r.full), m_screen(Rigour::screen(r.full, r.screen_samples)) {}

  // Builds announced batches on the pool while earlier ones are checked and timed on the
  // device (the search announces a few batches ahead); screen() waits for its own only.
  void prefetch(const std::vector<ParamPoint>& points) override {
    m_ev.build_ahead(candidates(points));
  }

  std::vector<Evaluation> screen(const std::vector<ParamPoint>& points,
                                 StageTimes& times) override {
    std::vector<Evaluation> out(points.size());
    if (m_first) {  // a fresh cache's roofs are measured while the first batch builds
      m_first = false;
      auto [build_s, roofs_s] = m_ev.build_while_measuring_roofs(candidates(points));
      times.build_s += build_s;
      times.other_s += roofs_s;
    }
    times.build_s += m_ev.wait_for_builds(candidates(points));  // what did not overlap
    // One slice per live worker: a slice whose worker is lost is screened again on another.
    // Each phase's time is the longest slice's.
    auto ranges = split_ranges(points.size(), std::max<std::size_t>(1, m_ev.live_workers()));
    std::vector<std::vector<Candidate>> slices;
    for (const auto& [first, last] : ranges)
      slices.push_back(candidates({points.begin() + first, points.begin() + last}));
    std::vector<int> ran_on(ranges.size(), -1);
    auto reports = m_ev.spread(slices, m_screen, [&](std::size_t s, std::size_t w, const auto&) {
      ran_on[s] = static_cast<int>(w);
    });
    StageTimes longest;
    for (const auto& b : reports) {
      if (!b) continue;
      StageTimes t = stage_times(*b);
      longest.build_s = std::max(longest.build_s, t.build_s);
      longest.check_s = std::max(longest.check_s, t.check_s);
      longest.measure_s = std::max(longest.measure_s, t.measure_s);
      longest.other_s = std::max(longest.other_s, t.other_s);
    }
    times += longest;
    for (std::size_t s = 0; s < ranges.size(); ++s) {
      const Expected<BenchReport>& b = reports[s];
      for (std::size_t i = ranges[s].first; i < ranges[s].second; ++i) {
        Evaluation& e = out[i];
        e.point = points[i];
        e.device = ran_on[s];
        const BenchVariant* v = outcome(b, i - ranges[s].first, e.ok, e.failure);
        if (!v) continue;
        e.cost = v->summary.median;
        e.cost_low = v->summary.median_low;
        e.cost_high = v->summary.median_high;
        e.build_s = v->build.compile_ms / 1000;  // its compile's, now or (cached) earlier
        e.wall_s = b->wall_s / double(ranges[s].second - ranges[s].first);
        m_ev.options().log((e.ok ? "  " : "  FAILED ") + point_to_string(e.point) +
                           (e.ok ? "" : ": " + e.failure));
      }
    }
    return out;
  }

  // Side by side in groups of k_group on one device (a comparison of many in one job drifts
  // less; one of hundreds would hold all their buffers at once); when that worker is lost, the
  // confirmation starts again on the next.
  std::vector<Confirmed> confirm(const std::vector<ParamPoint>& points,
                                 StageTimes& times) override {
    constexpr std::size_t k_group = 8;
    m_ev.options().log("confirming " + std::to_string(points.size()) +
                       " candidate(s) with the full measurement");
    std::vector<std::vector<Candidate>> groups;
    for (std::size_t first = 0; first < points.size(); first += k_group)
      groups.push_back(candidates(
          {points.begin() + first, points.begin() + std::min(points.size(), first + k_group)}));
    auto reports = m_ev.on_one_device(groups, m_full, m_confirmed_on);
    std::vector<Confirmed> out(points.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (reports[g]) times += stage_times(*reports[g]);
      for (std::size_t i = 0; i < groups[g].size(); ++i) {
        Confirmed& c = out[g * k_group + i];
        c.point = points[g * k_group + i];
        if (const BenchVariant* v = outcome(reports[g], i, c.ok, c.failure)) c.summary = v->summary;
      }
    }
    return out;
  }

  std::size_t confirmed_on() const { return m_confirmed_on; }

 private:
  std::vector<Candidate> candidates(const std::vector<ParamPoint>& points) const {
    std::vector<Candidate> out;
    for (const auto& p : points) out.push_back({m_k.name, as_sets(p)});
    return out;
  }

  static StageTimes stage_times(const BenchReport& b) {
    StageTimes t{b.build_s, b.check_s, b.measure_s, 0};
    t.other_s = std::max(0.0, b.wall_s - t.total());
    return t;
  }

  // Variant i of a job: ok, or why not (the job's own error when it failed as a whole).
  static const BenchVariant* outcome(const Expected<BenchReport>& b, std::size_t i, bool& ok,
                                     std::string& failure) {
    ok = false;
    if (!b) {
      failure = b.error().message;
      return nullptr;
    }
    const BenchVariant& v = b->variants.at(i);
    ok = v.status == VariantStatus::ok;
    if (!ok)
      failure = std::string(name_of(v.status)) +
                (v.error.empty() ? "" : ": " + v.error.substr(0, v.error.find('\n')));
    return &v;
  }

  evaluate::Evaluator& m_ev;
  const KernelSpec& m_k;
  Rigour m_full, m_screen;
  bool m_first = true;  // no batch screened yet
  std::size_t m_confirmed_on = 0;
};

}  // namespace

Expected<TuneReport> run_tune(const TuneRequest& request, evaluate::Evaluator& ev) {
  auto t0 = std::chrono::steady_clock::now();
  const Problem& problem = ev.problem();
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
  auto devices = ev.devices();
  if (!devices) return Unexpected(devices.error());
  report.devices = *devices;
  report.jobs = std::max(1u, ev.options().jobs);

  SearchSpace space = SearchSpace::from_kernel(*k, problem.dim_scope());
  space.hold(request.fixed);  // --set holds a param at one value
  report.space_size = space.size();

  SearchOptions so = request.search;
  so.start.insert(so.start.begin(), *def);
  so.batch = report.batch =
      batch_for_memory(so.batch, candidate_footprint(problem), report.devices);
  EvaluatorTuneLab lab(ev, *k, request);
  report.stages = run_two_stage(space, lab, so, request.confirm);

  auto c0 = std::chrono::steady_clock::now();
  const auto& champion = report.stages.champion;
  if (champion && champion->point != *def && request.compare_with_default) {
    auto cmp = ev.compare({k->name, as_sets(champion->point)}, {k->name, as_sets(*def)},
                          Rigour::compare(request.full));
    if (cmp) report.final_comparison = *cmp;
  }
  report.confirmed_on = lab.confirmed_on();
  report.device_notes = ev.notes();
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

}  // namespace kopt::tune
