#pragma once
// The roofline: which roofs apply (measured ceilings first, else the cited spec table), the
// kernel's arithmetic intensity from the problem's cost formulas and from ncu's counted
// FLOPs and DRAM bytes, the achieved fraction of each roof, and the gaps Δc, Δm, Δl.
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/hardware_spec.hpp"
#include "kopt/measure/ceiling.hpp"
#include "kopt/tools/ncu_csv.hpp"

namespace kopt {

// FLOPs ncu counted, by precision. FFMA/DFMA count 2, HFMA2 4 (two lanes), HADD2/HMUL2 2;
// tensor-core ops are counted as ncu reports them (FLOPs).
struct FlopCounts {
  double fp64 = 0, fp32 = 0, fp16 = 0, tensor = 0;
  std::string
      tensor_precision;  // the tensor path with the most ops: fp16, bf16, tf32, fp8, int8, fp64
  double total() const { return fp64 + fp32 + fp16 + tensor; }
  // The precision that did most of the work: "tensor", "fp64", "fp32" or "fp16".
  std::string dominant() const;
};
// `count_half`: false drops the scalar half-precision counts, which ptxas' constant moves
// (HFMA2.MMA R, -RZ, RZ, ...) inflate in kernels with no half-precision data.
FlopCounts flops_from_metrics(const MetricValues& m, bool count_half);
// DRAM bytes read + written, nullopt when ncu did not report them.
std::optional<double> dram_bytes_from_metrics(const MetricValues& m);

struct Roof {
  std::string name;    // "fp32_fma", "tensor_bf16", "dram"
  double rate = 0;     // FLOP/s or byte/s
  std::string origin;  // "measured" or "spec"
  std::string source;  // "kopt ceilings, measured 2026-11-21T..." or the spec's citation
};

nlohmann::json to_json(const std::optional<Roof>& r);    // null when absent
nlohmann::json to_json(const std::optional<double>& v);  // null when absent

// The compute roof for a precision ("fp32", "fp64", "fp16", "bf16", "tf32", "fp8") and the
// memory roof, from measured ceilings when present, else from the spec table.
struct RoofChoice {
  std::optional<Roof> compute, memory;
  std::vector<std::string> notes;  // what was missing and why
};
// The measured ceiling (kopt ceilings) of a precision's compute roof: "fp32" fp32_fma,
// "fp16" tensor_f16, any other "tensor_<precision>" (tensor_bf16, tensor_tf32, tensor_fp8).
std::string compute_ceiling_name(const std::string& precision);

RoofChoice choose_roofs(const std::string& precision, const GpuSpec* spec,
                        const std::vector<Ceiling>* ceilings, const std::string& measured_at);

struct RooflinePoint {
  std::string basis;                           // "cost formulas" or "ncu counters"
  double flops = 0, bytes = 0, intensity = 0;  // FLOP/byte
  double flop_rate = 0, byte_rate = 0;         // achieved, per second
  double pct_compute_roof = 0, pct_memory_roof = 0;
  double attainable_flop_rate = 0;  // min(compute roof, intensity x memory roof)
  std::string bound;                // "memory" (left of the ridge) or "compute"
};

struct Roofline {
  std::optional<Roof> compute, memory;
  double ridge = 0;  // FLOP/byte
  std::vector<RooflinePoint> points;
  std::vector<std::string> notes;
};

struct RooflineInputs {
  double time_s = 0;
  std::optional<double> cost_flops, cost_bytes;
  std::optional<double> measured_flops, measured_bytes;
  RoofChoice roofs;
};
Roofline build_roofline(const RooflineInputs& in);

// Δc = 1 − max(tensor pipe %, FMA pipe %, SM throughput %), Δm = 1 − DRAM throughput %,
// Δl = the largest warp-stall share (stall cycles / all cycles per issued instruction,
// "selected" excluded); near_peak when all three are below 0.15.
struct Gaps {
  std::optional<double> compute, memory, latency;
  std::string top_stall;
  bool near_peak = false;
};
Gaps roofline_gaps(const MetricValues& m);
inline constexpr double k_near_peak_gap = 0.15;

// Stall reason -> share of cycles between two issued instructions, largest first.
std::vector<std::pair<std::string, double>> stall_shares(const MetricValues& m);

std::optional<double> metric(const MetricValues& m, const std::string& name);

}  // namespace kopt
