#pragma once
// Nsight Compute's CSV output, read into plain records. Both layouts ncu writes:
//   wide  (`--page raw`): one row per kernel launch, one column per metric, a units row;
//   long  (`--page details`): one row per metric, with "Metric Name", "Metric Unit" and
//         "Metric Value" columns; section labels ("Duration", "DRAM Throughput") are mapped
//         to the metric names they display.
// Values are converted to base units (ns, byte, byte/s, hz, %), thousands separators and
// "n/a" are handled, and several kernels and launches are kept apart.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

// Metric name -> value in base units.
using MetricValues = std::map<std::string, double>;

struct NcuLaunch {
  int id = 0;               // ncu's "ID" (launch order among profiled launches)
  std::string kernel;       // "Kernel Name" as ncu printed it
  std::string block, grid;  // "(256, 1, 1)"
  std::string device, cc;
  MetricValues metrics;
  std::vector<std::string> unavailable;      // metrics reported as n/a
  std::map<std::string, std::string> units;  // base unit of each metric, as printed
  std::map<std::string, std::string>
      attributes;  // non-numeric columns (device__attribute_display_name, ...)
};

struct NcuReport {
  std::string layout;  // "wide" or "long"
  std::vector<NcuLaunch> launches;
  std::vector<std::string> messages;  // ==WARNING== / ==ERROR== / ==PROF== lines
};

Expected<NcuReport> parse_ncu_csv(std::string_view text, const std::string& source);

// "1,924,129,199.60" -> 1924129199.6; "n/a", "", "nan" -> nullopt.
std::optional<double> parse_ncu_number(std::string_view text);
// Scale to base units: "usecond" -> 1e3 (to ns), "Mbyte" -> 1e6, "Gbyte/second" -> 1e9 ...
// Returns the factor and the base unit; unknown units are kept with factor 1.
std::pair<double, std::string> ncu_unit_scale(std::string_view unit);

// The metric name behind a details-page label of the standard sections, or "".
std::string metric_for_label(std::string_view section, std::string_view label);

// One kernel's metrics averaged over its launches.
struct NcuKernelProfile {
  std::string kernel;
  std::size_t launches = 0;
  std::vector<int> launch_ids;
  MetricValues metrics;
  std::vector<std::string> other_kernels;  // the rest of the report, for the record
};

// The target kernel: the one whose name equals `name` (or, failing that, the one whose name
// contains it); with no name, the kernel with the longest total duration.
Expected<NcuKernelProfile> select_kernel(const NcuReport& report, const std::string& name);

}  // namespace kopt
