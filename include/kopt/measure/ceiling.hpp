#pragma once
// A ceiling: what the device really sustains, measured (kopt ceilings), as the roofline's roofs
// use it.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

struct Ceiling {
  std::string name;  // "dram_copy", "fp32_fma", "tensor_f16", ...
  std::string unit;  // "B/s" or "FLOP/s"
  double best = 0;   // the best sample
  double median = 0;
  std::string method;  // how it was measured
  std::string error;   // why it is missing
};

// A ceiling from the seconds each run of `amount` units took: best and median rates, or
// the reason there are none.
Ceiling ceiling_from_times(const std::string& name, const std::string& unit, double amount,
                           const Expected<std::vector<double>>& seconds, const std::string& method);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Ceiling, name, unit, best, median, method, error)

}  // namespace kopt
