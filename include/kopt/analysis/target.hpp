#pragma once
// What "fast enough" means for a problem on a GPU, before any kernel runs: the roofs (with
// their sources), the problem's FLOPs and bytes from its cost formulas, the bound, and the
// stop conditions (90 % of the relevant roof). report/target_markdown writes target.md.
#include <optional>
#include <string>

#include "kopt/analysis/roofline.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

inline constexpr double k_target_fraction = 0.9;

struct Target {
  std::string problem, device;
  std::string precision;
  const GpuSpec* spec = nullptr;
  RoofChoice roofs;
  double flops = 0, bytes = 0, intensity = 0, ridge = 0;
  std::string bound;    // "memory", "compute" or "" when a roof is missing
  double floor_s = 0;   // the roofline's lower bound on the time
  double target_s = 0;  // floor / 0.9
};

// The compute precision a problem's data suggest: its first output's dtype.
std::string default_precision(const Problem& p);

Expected<Target> compute_target(const Problem& p, const std::string& precision, const GpuSpec* spec,
                                const std::string& device, const std::vector<Ceiling>* ceilings,
                                const std::string& measured_at);

nlohmann::json to_json(const Target& t);

}  // namespace kopt
