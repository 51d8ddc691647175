#pragma once
// The roofs of a device: the memory bandwidth and the fastest compute rate that the roofline
// floor (a time below it is an error, not a result) and the %BW / %FLOP columns divide by.
// Every consumer (bench, profile, the optimize/iter lab) gets them here, in this order:
//   1. the measured ceilings stored for this device (`kopt ceilings`);
//   2. else measured now, on first use, through the worker, and stored for later runs;
//   3. else (no worker, or measuring failed) the cited spec table's peak figures;
//   4. else none, with the reason.
// The roofs always say which, in `source`.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kopt/analysis/hardware_spec.hpp"
#include "kopt/evaluate/ceilings_store.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt::evaluate {

enum class RoofsOrigin {
  measured,      // stored ceilings, measured earlier
  measured_now,  // measured on first use, in this run
  spec,          // the spec table (peak figures from cited documents)
  none,
};
std::string_view roofs_origin_name(RoofsOrigin o);  // "measured", "measured_now", "spec", "none"

struct RoofRate {
  double rate = 0;  // byte/s or FLOP/s; 0: unknown
  std::string
      name;  // the ceiling ("dram_copy", "tensor_bf16") or spec field ("memory_bandwidth_gbs")
  std::string source;  // "kopt ceilings (<method>), measured <date>" or the spec's citation
};

struct DeviceRoofs {
  RoofsOrigin origin = RoofsOrigin::none;
  // "measured <date>", "measured now (first use, 4.8 s)", "spec table: <document, section>"
  // or "none: <why>".
  std::string source;
  RoofRate bandwidth;  // DRAM, byte/s
  RoofRate compute;    // the fastest compute rate known (FMA or any tensor-core precision), FLOP/s
  // A median below floor_margin x the floor is an error (see roofs.cpp for the margins).
  double floor_margin = 0.9;
  std::optional<StoredCeilings> ceilings;  // the measurement the roofs come from, when measured
  bool remeasured = false;                 // measured again after a time fell below their floor
  std::vector<std::string> notes;          // what failed on the way (measuring, storing)
};

// How ceilings are measured when none are stored: the worker's `ceilings` op in kopt, a fake
// in tests.
using MeasureCeilings = std::function<Expected<CeilingsResult>()>;
using RoofsLog = std::function<void(const std::string&)>;

// The worker's measurement (the same time limit as `kopt ceilings`).
MeasureCeilings worker_ceilings(WorkerClient& worker);

// The roofs of `device`, by the order above. A measurement that failed is not tried again in
// this process (an optimize run benches hundreds of times): the spec table serves instead.
// `measure` may be empty (no worker): stored ceilings or the spec table.
DeviceRoofs resolve_roofs(const std::filesystem::path& cache_root, const DeviceInfo& device,
                          const MeasureCeilings& measure, const RoofsLog& log = {});

// Whether a time below the floor of these roofs may be the roofs' fault rather than the
// kernel's: a CPU's ceilings measured earlier while the host was busy. Then they are measured
// once more (remeasure_roofs) before the time is called an error.
bool roofs_may_be_low(const DeviceRoofs& roofs, const DeviceInfo& device);
// Measures again and keeps, per ceiling, the best of the stored and the new measurement;
// stores the result. `previous` is returned (with a note) when measuring fails.
DeviceRoofs remeasure_roofs(const std::filesystem::path& cache_root, const DeviceInfo& device,
                            const MeasureCeilings& measure, const DeviceRoofs& previous,
                            const RoofsLog& log = {});

// Per ceiling name, the better of two measurements (a ceiling is what the device can do).
CeilingsResult best_of(const CeilingsResult& a, const CeilingsResult& b);

// The compute roof of one precision (the roofline's names: "bf16", "fp16", "fp32", "fp64", as
// problem_precision gives): its measured ceiling (compute_ceiling_name; fp32 with
// `tf32_allowed`, a problem whose kopt.toml allows tf32: the faster of the FMA and tf32
// ceilings); the fastest rate (`roofs.compute`) where there is none, or the precision is
// unknown. The %FLOP columns divide by it; the floor keeps the fastest rate, which holds
// whatever a kernel computes in.
RoofRate precision_roof(const DeviceRoofs& roofs, const std::string& precision,
                        bool tf32_allowed = false);

// The precision a problem computes in: the narrowest floating-point dtype among its inputs
// ("bf16", "fp16", "fp32", "fp64"); empty without one.
std::string problem_precision(const Problem& p);

// The roofline floor of work that moves `bytes` and does `flops`: no correct kernel is faster.
// The memory roof holds only when the data come from DRAM (`from_dram`: cold cache). 0 when
// no roof is known.
double roofline_floor_s(const DeviceRoofs& roofs, double bytes, double flops, bool from_dram);
// Whether a median is below the floor by more than the roofs' margin allows.
bool is_below_floor(const DeviceRoofs& roofs, double median_s, double floor_s);

// {origin, source, bandwidth {rate, name, source}, compute {...}, floor_margin, notes}
nlohmann::json to_json(const DeviceRoofs& r);

}  // namespace kopt::evaluate
