#include "kopt/analysis/explanation.hpp"

namespace kopt {
namespace {

nlohmann::json to_json(const std::vector<Evidence>& ev) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : ev)
    out.push_back({{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}, {"test", e.test}});
  return out;
}

}  // namespace

Explanation explain(const ExplainInputs& in) {
  Explanation e;
  e.kernel = in.profile.kernel;
  e.launches = in.profile.launches;
  e.other_kernels = in.profile.other_kernels;
  e.metrics = in.profile.metrics;
  const MetricValues& m = e.metrics;
  if (in.time_s) {
    e.time_s = *in.time_s;
    e.time_source = "kopt bench median";
  } else if (auto ns = metric(m, "gpu__time_duration.sum")) {
    e.time_s = *ns * 1e-9;
    e.time_source = "ncu gpu__time_duration.sum (one profiled launch, caches flushed)";
  }
  e.flops = flops_from_metrics(m, in.has_half_data);
  if (flops_from_metrics(m, true).fp16 > 0)
    e.notes.push_back(
        in.has_half_data
            ? "scalar half-precision FLOPs are included; ptxas also uses HFMA2 to move constants, "
              "which inflates them "
              "(analyze with --problem to drop them for problems without f16/bf16 data)"
            : "scalar half-precision counts ignored: the problem has no f16/bf16 data, and ptxas "
              "uses HFMA2 to "
              "move constants");
  e.dram_bytes = dram_bytes_from_metrics(m);
  if (e.flops.tensor > 0)
    e.precision = e.flops.tensor_precision;
  else
    e.precision = e.flops.dominant() == "fp64" ? "fp64" : "fp32";
  const GpuSpec* spec = in.spec ? in.spec : find_gpu_spec(in.device_name);
  if (spec)
    e.spec_id = spec->id;
  else
    e.notes.push_back("GPU '" + in.device_name +
                      "' is not in the spec table (kopt specs lists it)");
  RooflineInputs ri;
  ri.time_s = e.time_s;
  ri.cost_flops = in.cost_flops;
  ri.cost_bytes = in.cost_bytes;
  bool counted = metric(m, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum").has_value() ||
                 metric(m, "sm__ops_path_tensor_src_fp16.sum").has_value();
  if (counted) ri.measured_flops = e.flops.total();
  ri.measured_bytes = e.dram_bytes;
  ri.roofs = choose_roofs(e.precision, spec, in.ceilings, in.ceilings_measured_at);
  e.roofline = build_roofline(ri);
  e.gaps = roofline_gaps(m);
  e.bottleneck = classify_bottleneck(m);
  return e;
}

nlohmann::json to_json(const Explanation& e) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : e.roofline.points)
    points.push_back({{"basis", p.basis},
                      {"flops", p.flops},
                      {"bytes", p.bytes},
                      {"intensity", p.intensity},
                      {"flop_rate", p.flop_rate},
                      {"byte_rate", p.byte_rate},
                      {"pct_compute_roof", p.pct_compute_roof},
                      {"pct_memory_roof", p.pct_memory_roof},
                      {"attainable_flop_rate", p.attainable_flop_rate},
                      {"bound", p.bound}});
  nlohmann::json secondary = nlohmann::json::array();
  for (const auto& f : e.bottleneck.secondary)
    secondary.push_back({{"id", f.id},
                         {"summary", f.summary},
                         {"rule", f.rule},
                         {"evidence", to_json(f.evidence)}});
  return {
      {"kernel", e.kernel},
      {"launches", e.launches},
      {"other_kernels", e.other_kernels},
      {"time_s", e.time_s},
      {"time_source", e.time_source},
      {"flops",
       {{"fp64", e.flops.fp64},
        {"fp32", e.flops.fp32},
        {"fp16", e.flops.fp16},
        {"tensor", e.flops.tensor},
        {"tensor_precision", e.flops.tensor_precision},
        {"total", e.flops.total()}}},
      {"dram_bytes", to_json(e.dram_bytes)},
      {"precision", e.precision},
      {"spec", e.spec_id},
      {"roofline",
       {{"compute_roof", to_json(e.roofline.compute)},
        {"memory_roof", to_json(e.roofline.memory)},
        {"ridge", e.roofline.ridge},
        {"points", points},
        {"notes", e.roofline.notes}}},
      {"gaps",
       {{"compute", to_json(e.gaps.compute)},
        {"memory", to_json(e.gaps.memory)},
        {"latency", to_json(e.gaps.latency)},
        {"top_stall", e.gaps.top_stall},
        {"near_peak", e.gaps.near_peak}}},
      {"bottleneck",
       {{"class", std::string(bottleneck_name(e.bottleneck.cls))},
        {"limiter", e.bottleneck.limiter},
        {"rule", e.bottleneck.rule},
        {"evidence", to_json(e.bottleneck.evidence)},
        {"secondary", secondary},
        {"missing_metrics", e.bottleneck.missing}}},
      {"notes", e.notes},
      {"metrics", e.metrics},
  };
}

}  // namespace kopt
