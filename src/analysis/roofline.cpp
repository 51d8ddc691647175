#include "kopt/analysis/roofline.hpp"

#include <algorithm>

namespace kopt {
namespace {

const char* k_stall_prefix = "smsp__average_warps_issue_stalled_";
const char* k_stall_suffix = "_per_issue_active.ratio";

double value_or_zero(const MetricValues& m, const std::string& name) {
  return metric(m, name).value_or(0.0);
}

}  // namespace

std::optional<double> metric(const MetricValues& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::string FlopCounts::dominant() const {
  std::pair<double, const char*> all[] = {
      {tensor, "tensor"}, {fp64, "fp64"}, {fp32, "fp32"}, {fp16, "fp16"}};
  auto best = std::max_element(std::begin(all), std::end(all),
                               [](auto& a, auto& b) { return a.first < b.first; });
  return best->first > 0 ? best->second : "fp32";
}

FlopCounts flops_from_metrics(const MetricValues& m, bool count_half) {
  auto ops = [&](const char* op) {
    return value_or_zero(m,
                         std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum");
  };
  FlopCounts f;
  f.fp32 = 2 * ops("ffma") + ops("fadd") + ops("fmul");
  f.fp64 = 2 * ops("dfma") + ops("dadd") + ops("dmul");
  if (count_half) f.fp16 = 4 * ops("hfma") + 2 * ops("hadd") + 2 * ops("hmul");
  std::pair<const char*, const char*> paths[] = {
      {"fp16", "sm__ops_path_tensor_src_fp16.sum"},
      {"bf16", "sm__ops_path_tensor_src_bf16_dst_fp32.sum"},
      {"tf32", "sm__ops_path_tensor_src_tf32_dst_fp32.sum"},
      {"fp8", "sm__ops_path_tensor_src_fp8.sum"},
      {"int8", "sm__ops_path_tensor_src_int8.sum"},
      {"fp64", "sm__ops_path_tensor_src_fp64.sum"}};
  double most = 0;
  for (auto [precision, name] : paths) {
    double v = value_or_zero(m, name);
    f.tensor += v;
    if (v > most) {
      most = v;
      f.tensor_precision = precision;
    }
  }
  return f;
}

std::optional<double> dram_bytes_from_metrics(const MetricValues& m) {
  auto r = metric(m, "dram__bytes_read.sum");
  auto w = metric(m, "dram__bytes_write.sum");
  if (!r && !w) return std::nullopt;
  return r.value_or(0) + w.value_or(0);
}

nlohmann::json to_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const std::optional<Roof>& r) {
  if (!r) return nullptr;
  return {{"name", r->name}, {"rate", r->rate}, {"origin", r->origin}, {"source", r->source}};
}

std::string compute_ceiling_name(const std::string& precision) {
  return precision == "fp32" ? "fp32_fma"
                             : "tensor_" + (precision == "fp16" ? std::string("f16") : precision);
}

RoofChoice choose_roofs(const std::string& precision, const GpuSpec* spec,
                        const std::vector<Ceiling>* ceilings, const std::string& measured_at) {
  RoofChoice c;
  auto measured = [&](const std::string& name) -> std::optional<Roof> {
    if (!ceilings) return std::nullopt;
    for (const auto& x : *ceilings)
      if (x.name == name && x.error.empty() && x.best > 0)
        return Roof{name, x.best, "measured",
                    "kopt ceilings (" + x.method + "), measured " + measured_at};
    return std::nullopt;
  };
  auto from_spec = [&](const std::string& name, const std::string& field,
                       double scale) -> std::optional<Roof> {
    if (!spec) return std::nullopt;
    auto v = spec->number(field);
    if (!v) return std::nullopt;
    return Roof{name, *v * scale, "spec", spec->name + ": " + spec->citation(field)};
  };
  std::string ceiling = compute_ceiling_name(precision);
  std::string field = precision == "int8" ? "int8_tops" : precision + "_tflops";
  c.compute = measured(ceiling);
  if (!c.compute) c.compute = from_spec(precision, field, 1e12);
  if (!c.compute)
    c.notes.push_back("no " + precision + " compute roof: no measured ceiling '" + ceiling +
                      "' and the spec table has no " + field +
                      (spec ? " for " + spec->name : " (GPU not in the table)"));
  c.memory = measured("dram_copy");
  if (!c.memory) c.memory = from_spec("dram", "memory_bandwidth_gbs", 1e9);
  if (!c.memory)
    c.notes.push_back(
        "no memory roof: run `kopt ceilings`, or add the GPU to specs/ with a cited bandwidth");
  return c;
}

Roofline build_roofline(const RooflineInputs& in) {
  Roofline r;
  r.compute = in.roofs.compute;
  r.memory = in.roofs.memory;
  r.notes = in.roofs.notes;
  if (r.compute && r.memory) r.ridge = r.compute->rate / r.memory->rate;
  auto point = [&](const std::string& basis, std::optional<double> flops,
                   std::optional<double> bytes) {
    if (!flops || !bytes || in.time_s <= 0) return;
    RooflinePoint p;
    p.basis = basis;
    p.flops = *flops;
    p.bytes = *bytes;
    p.intensity = *bytes > 0 ? *flops / *bytes : 0;
    p.flop_rate = *flops / in.time_s;
    p.byte_rate = *bytes / in.time_s;
    if (r.compute) p.pct_compute_roof = 100.0 * p.flop_rate / r.compute->rate;
    if (r.memory) p.pct_memory_roof = 100.0 * p.byte_rate / r.memory->rate;
    if (r.compute && r.memory) {
      p.attainable_flop_rate = std::min(r.compute->rate, p.intensity * r.memory->rate);
      p.bound = p.intensity < r.ridge ? "memory" : "compute";
    }
    r.points.push_back(p);
  };
  point("cost formulas", in.cost_flops, in.cost_bytes);
  point("ncu counters", in.measured_flops, in.measured_bytes);
  if (in.cost_bytes && in.measured_bytes && *in.cost_bytes > 0 &&
      *in.measured_bytes > 1.5 * *in.cost_bytes)
    r.notes.push_back("DRAM moved " +
                      std::to_string(*in.measured_bytes / *in.cost_bytes).substr(0, 4) +
                      "x the bytes the cost formula counts: re-reads that miss in L2, or a formula "
                      "that undercounts");
  return r;
}

std::vector<std::pair<std::string, double>> stall_shares(const MetricValues& m) {
  std::vector<std::pair<std::string, double>> out;
  auto total = metric(m, "smsp__average_warps_active_per_issue_active.ratio");
  if (!total || *total <= 0) return out;
  const std::string prefix = k_stall_prefix, suffix = k_stall_suffix;
  for (const auto& [name, v] : m) {
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    std::string reason = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (reason == "selected") continue;  // issuing, not stalled
    out.emplace_back(reason, v / *total);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return out;
}

Gaps roofline_gaps(const MetricValues& m) {
  Gaps g;
  std::optional<double> busiest;
  for (const char* name : {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                           "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                           "sm__throughput.avg.pct_of_peak_sustained_elapsed"})
    if (auto v = metric(m, name)) busiest = std::max(busiest.value_or(0.0), *v);
  if (busiest) g.compute = std::clamp(1.0 - *busiest / 100.0, 0.0, 1.0);
  if (auto d = metric(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed"))
    g.memory = std::clamp(1.0 - *d / 100.0, 0.0, 1.0);
  auto stalls = stall_shares(m);
  if (!stalls.empty()) {
    g.latency = std::clamp(stalls.front().second, 0.0, 1.0);
    g.top_stall = stalls.front().first;
  }
  g.near_peak = g.compute && g.memory && g.latency && *g.compute < k_near_peak_gap &&
                *g.memory < k_near_peak_gap && *g.latency < k_near_peak_gap;
  return g;
}

}  // namespace kopt
