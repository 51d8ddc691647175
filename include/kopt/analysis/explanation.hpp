#pragma once
// "Explain a kernel": one target kernel's ncu metrics, placed on the roofline against the
// chosen roofs, with its gaps and its bottleneck. A plain record that writers render.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/bottleneck.hpp"
#include "kopt/analysis/roofline.hpp"

namespace kopt {

struct ExplainInputs {
  NcuKernelProfile profile;
  std::string device_name;        // to find the spec; may be ncu's or the driver's
  const GpuSpec* spec = nullptr;  // found from device_name when null
  const std::vector<Ceiling>* ceilings = nullptr;
  std::string ceilings_measured_at;
  std::optional<double> cost_flops, cost_bytes;  // the problem's cost formulas, evaluated
  bool has_half_data =
      true;  // the problem has f16/bf16 tensors (else scalar half counts are ptxas noise)
  std::optional<double> time_s;  // overrides ncu's duration (e.g. the median of `kopt bench`)
};

struct Explanation {
  std::string kernel;
  std::size_t launches = 0;
  std::vector<std::string> other_kernels;
  double time_s = 0;
  std::string time_source;  // "ncu gpu__time_duration.sum" or "kopt bench median"
  FlopCounts flops;
  std::optional<double> dram_bytes;
  std::string precision;  // the compute roof's precision
  std::string spec_id;    // "" when the GPU is not in the table
  Roofline roofline;
  Gaps gaps;
  Bottleneck bottleneck;
  std::vector<std::string> notes;
  MetricValues metrics;
};

Explanation explain(const ExplainInputs& in);

nlohmann::json to_json(const Explanation& e);

}  // namespace kopt
