#include "kopt/evaluate/roofs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "kopt/analysis/roofline.hpp"
#include "kopt/core/clock.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The floor's margins: a median below margin x floor is an error of the harness or of the
// kernel (does it do all its work?), not a result.
//
// Measured roofs: a good kernel may beat a measured ceiling by a few percent (outputs that
// fit in L2 need not reach DRAM before the kernel ends; a cost formula counts bytes that L2
// serves), never by 10 %.
constexpr double k_margin_measured = 0.9;
// Spec roofs: the same margin. The spec's bandwidth is a peak that no kernel reaches (copies
// reach ~90 % of it), so bytes / peak is already a lower floor than a measured one; the margin
// keeps the same allowance for what the cost formula cannot see. The floor then flags times
// beyond ~111 % of the peak: never a correct kernel, still a kernel that skipped half its
// work (200 %). A tighter margin would gain little and rest on a cost formula being exact.
constexpr double k_margin_spec = 0.9;
// Roofs measured on a CPU (OpenCL on the host): its streaming and FMA rates are shared with
// everything else the host runs, and a busy moment (a parallel build, other tests) can halve
// them, while a kernel of tens of microseconds runs inside one time slice at the quiet rate.
// Such roofs are measured again when a time falls below their floor (remeasure_roofs), and
// the margin is wider. With every core of a 2-core host busy (scripts/with-load) the best
// 4 MiB window read 13.1-23.0 GB/s where the quiet host reads 24.6, and an honest 786 KiB
// kernel, its lines evicted before each sample (backend/opencl/host_cache.hpp), ran at the
// quiet rate: 0.97 of the floor those roofs gave. So on a CPU the floor flags a time twice as
// fast as the roofs allow: every cheat of tests/hacks caught by the floor ran at 0.01-0.17 of
// it, and work skipped on some launches is the output verification's to catch (as
// fraction_of_work is, inconsistent), not the floor's.
constexpr double k_margin_measured_on_cpu = 0.5;

constexpr auto k_measure_timeout = std::chrono::minutes(5);

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// Measurements that failed in this process, by cache and device: not tried again.
class FailedMeasurements {
 public:
  std::optional<std::string> find(const std::string& key) {
    std::lock_guard lock(m_mutex);
    auto it = m_failed.find(key);
    if (it == m_failed.end()) return std::nullopt;
    return it->second;
  }
  void add(const std::string& key, const std::string& why) {
    std::lock_guard lock(m_mutex);
    m_failed[key] = why;
  }

 private:
  std::mutex m_mutex;
  std::map<std::string, std::string> m_failed;
};

FailedMeasurements& failed_measurements() {
  static FailedMeasurements f;
  return f;
}

std::optional<RoofRate> measured_bandwidth(const StoredCeilings& s) {
  for (const auto& c : s.result.ceilings)
    if (c.name == "dram_copy" && c.error.empty() && c.best > 0)
      return RoofRate{c.best, c.name,
                      "kopt ceilings (" + c.method + "), measured " + s.measured_at};
  return std::nullopt;
}

std::optional<RoofRate> measured_compute(const StoredCeilings& s) {
  std::optional<RoofRate> best;
  for (const auto& c : s.result.ceilings)
    if (c.unit == "FLOP/s" && c.error.empty() && c.best > 0 && (!best || c.best > best->rate))
      best =
          RoofRate{c.best, c.name, "kopt ceilings (" + c.method + "), measured " + s.measured_at};
  return best;
}

std::optional<RoofRate> spec_bandwidth(const GpuSpec* spec) {
  if (!spec) return std::nullopt;
  auto v = spec->number("memory_bandwidth_gbs");
  if (!v || *v <= 0) return std::nullopt;
  return RoofRate{*v * 1e9, "memory_bandwidth_gbs", spec->citation("memory_bandwidth_gbs")};
}

// The fastest FLOP rate the table lists (any precision, dense): a floor must hold for every
// kernel, whatever precision it computes in.
std::optional<RoofRate> spec_compute(const GpuSpec* spec) {
  if (!spec) return std::nullopt;
  std::optional<RoofRate> best;
  for (const SpecField& f : spec_fields()) {
    if (std::string(f.unit) != "TFLOP/s") continue;
    auto v = spec->number(f.name);
    if (v && *v > 0 && (!best || *v * 1e12 > best->rate))
      best = RoofRate{*v * 1e12, f.name, spec->citation(f.name)};
  }
  return best;
}

bool usable(const StoredCeilings& s) {
  return measured_bandwidth(s) || measured_compute(s);
}

double margin_for(RoofsOrigin origin, const DeviceInfo& device) {
  if (origin == RoofsOrigin::spec) return k_margin_spec;
  return device.is_host_cpu() ? k_margin_measured_on_cpu : k_margin_measured;
}

// Roofs from a measurement; a roof it lacks comes from the spec table, and the source says so.
DeviceRoofs from_measurement(const StoredCeilings& s, RoofsOrigin origin, std::string source,
                             const DeviceInfo& device) {
  const GpuSpec* spec = find_gpu_spec(device.name);
  DeviceRoofs r;
  r.origin = origin;
  r.source = std::move(source);
  r.ceilings = s;
  r.floor_margin = margin_for(origin, device);
  if (auto bw = measured_bandwidth(s))
    r.bandwidth = *bw;
  else if (auto from_spec = spec_bandwidth(spec)) {
    r.bandwidth = *from_spec;
    r.source += "; bandwidth from the spec table (not measured)";
  }
  if (auto c = measured_compute(s))
    r.compute = *c;
  else if (auto from_spec = spec_compute(spec)) {
    r.compute = *from_spec;
    r.source += "; compute from the spec table (not measured)";
  }
  return r;
}

DeviceRoofs from_spec_or_none(const DeviceInfo& device, const std::string& why) {
  const GpuSpec* spec = find_gpu_spec(device.name);
  DeviceRoofs r;
  auto bw = spec_bandwidth(spec);
  auto compute = spec_compute(spec);
  if (!bw && !compute) {
    r.origin = RoofsOrigin::none;
    r.source = "none: " + why + "; '" + device.name +
               (spec ? "' has no bandwidth or FLOP rate in the spec table"
                     : "' is not in the spec table (kopt specs)");
    return r;
  }
  r.origin = RoofsOrigin::spec;
  r.floor_margin = margin_for(r.origin, device);
  if (bw) r.bandwidth = *bw;
  if (compute) r.compute = *compute;
  r.source = "spec table: " + spec->name + ", " + (bw ? bw->source : compute->source) +
             " (not measured: " + why + ")";
  return r;
}

std::string seconds_text(std::chrono::steady_clock::duration d) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}

}  // namespace

std::string_view roofs_origin_name(RoofsOrigin o) {
  switch (o) {
    case RoofsOrigin::measured:
      return "measured";
    case RoofsOrigin::measured_now:
      return "measured_now";
    case RoofsOrigin::spec:
      return "spec";
    case RoofsOrigin::none:
      return "none";
  }
  return "none";
}

MeasureCeilings worker_ceilings(WorkerClient& worker) {
  return [&worker]() { return worker.ceilings(k_measure_timeout); };
}

DeviceRoofs resolve_roofs(const fs::path& cache_root, const DeviceInfo& device,
                          const MeasureCeilings& measure, const RoofsLog& log) {
  auto stored = load_ceilings(cache_root, device);
  if (stored && usable(*stored))
    return from_measurement(*stored, RoofsOrigin::measured, "measured " + stored->measured_at,
                            device);
  const std::string key = (cache_root / ceilings_key(device)).string();
  std::string why;
  if (!measure) {
    why = "no stored ceilings, and no worker to measure them";
  } else if (auto failed = failed_measurements().find(key)) {
    why = *failed;
  } else {
    if (log)
      log("measuring the ceilings of " + device.name +
          " on first use (stored for later runs; kopt ceilings shows them)");
    auto t0 = std::chrono::steady_clock::now();
    auto measured = measure();
    auto took = std::chrono::steady_clock::now() - t0;
    if (measured && measured->error.empty()) {
      StoredCeilings s{device, *measured, utc_timestamp()};
      if (usable(s)) {
        DeviceRoofs r =
            from_measurement(s, RoofsOrigin::measured_now,
                             "measured now (first use, " + seconds_text(took) + ")", device);
        if (auto w = save_ceilings(cache_root, s); !w)
          r.notes.push_back("the ceilings were not stored: " + w.error().message);
        return r;
      }
      why = "measuring the ceilings gave no usable figure";
      for (const auto& c : measured->ceilings)
        if (!c.error.empty()) why += "; " + c.name + ": " + c.error;
    } else {
      why = "measuring the ceilings failed: " +
            first_line(measured ? measured->error : measured.error().message);
    }
    failed_measurements().add(key, why);
  }
  DeviceRoofs r = from_spec_or_none(device, why);
  r.notes.push_back(why);
  return r;
}

bool roofs_may_be_low(const DeviceRoofs& roofs, const DeviceInfo& device) {
  return device.is_host_cpu() && !roofs.remeasured && roofs.ceilings &&
         (roofs.origin == RoofsOrigin::measured || roofs.origin == RoofsOrigin::measured_now);
}

DeviceRoofs remeasure_roofs(const fs::path& cache_root, const DeviceInfo& device,
                            const MeasureCeilings& measure, const DeviceRoofs& previous,
                            const RoofsLog& log) {
  DeviceRoofs r = previous;
  r.remeasured = true;
  if (!measure || !previous.ceilings) return r;
  const std::string before = previous.ceilings->measured_at;
  if (log)
    log("a time fell below the floor of the ceilings measured " + before +
        " on this CPU: measuring them again");
  auto t0 = std::chrono::steady_clock::now();
  auto measured = measure();
  auto took = std::chrono::steady_clock::now() - t0;
  if (!measured || !measured->error.empty()) {
    r.notes.push_back("measuring the ceilings again failed: " +
                      first_line(measured ? measured->error : measured.error().message));
    return r;
  }
  StoredCeilings merged{device, best_of(previous.ceilings->result, *measured), utc_timestamp()};
  r = from_measurement(merged, RoofsOrigin::measured_now,
                       "measured again now (" + seconds_text(took) +
                           "), the best of this and the measurement of " + before +
                           ": a time fell below the floor of the earlier one",
                       device);
  r.remeasured = true;
  r.notes = previous.notes;
  if (auto w = save_ceilings(cache_root, merged); !w)
    r.notes.push_back("the ceilings were not stored: " + w.error().message);
  return r;
}

CeilingsResult best_of(const CeilingsResult& a, const CeilingsResult& b) {
  CeilingsResult out = b;
  for (const Ceiling& old : a.ceilings) {
    auto it = std::find_if(out.ceilings.begin(), out.ceilings.end(),
                           [&](const Ceiling& c) { return c.name == old.name; });
    if (it == out.ceilings.end())
      out.ceilings.push_back(old);
    else if (old.error.empty() && (!it->error.empty() || old.best > it->best))
      *it = old;
  }
  return out;
}

double roofline_floor_s(const DeviceRoofs& roofs, double bytes, double flops, bool from_dram) {
  double memory = from_dram && roofs.bandwidth.rate > 0 ? bytes / roofs.bandwidth.rate : 0;
  double compute = roofs.compute.rate > 0 ? flops / roofs.compute.rate : 0;
  return std::max(memory, compute);
}

bool is_below_floor(const DeviceRoofs& roofs, double median_s, double floor_s) {
  return floor_s > 0 && median_s > 0 && median_s < roofs.floor_margin * floor_s;
}

RoofRate precision_roof(const DeviceRoofs& roofs, const std::string& precision, bool tf32_allowed) {
  if (!roofs.ceilings || precision.empty()) return roofs.compute;
  std::vector<std::string> names{compute_ceiling_name(precision)};
  // An f32 kernel on TF32 tensor cores is lower_precision unless kopt.toml allows tf32: the
  // f32 roof is then the FMA's, not the tensor cores'.
  if (precision == "fp32" && tf32_allowed) names.push_back("tensor_tf32");
  std::optional<RoofRate> best;
  for (const auto& c : roofs.ceilings->result.ceilings)
    if (std::find(names.begin(), names.end(), c.name) != names.end() && c.error.empty() &&
        c.best > 0 && (!best || c.best > best->rate))
      best = RoofRate{c.best, c.name,
                      "kopt ceilings (" + c.method + "), measured " + roofs.ceilings->measured_at};
  return best ? *best : roofs.compute;
}

std::string problem_precision(const Problem& p) {
  int best = 0;  // 1 fp64, 2 fp32, 3 f16/bf16
  std::string out;
  for (const auto& t : p.tensors) {
    if (t.role == Role::output) continue;
    int rank = t.dtype == DType::f64                               ? 1
               : t.dtype == DType::f32                             ? 2
               : (t.dtype == DType::f16 || t.dtype == DType::bf16) ? 3
                                                                   : 0;
    if (rank > best) {
      best = rank;
      out = rank == 1 ? "fp64" : rank == 2 ? "fp32" : t.dtype == DType::f16 ? "fp16" : "bf16";
    }
  }
  return out;
}

json to_json(const DeviceRoofs& r) {
  auto rate = [](const RoofRate& x) -> json {
    if (x.rate <= 0) return nullptr;
    return {{"rate", x.rate}, {"name", x.name}, {"source", x.source}};
  };
  return {{"origin", roofs_origin_name(r.origin)}, {"source", r.source},
          {"bandwidth", rate(r.bandwidth)},        {"compute", rate(r.compute)},
          {"floor_margin", r.floor_margin},        {"notes", r.notes}};
}

}  // namespace kopt::evaluate
