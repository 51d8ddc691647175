#pragma once
// Names a kernel's bottleneck from its ncu metrics, with the rule that fired and the metric
// values behind it. Thresholds are Nsight Compute's own (its rule files, 2025.3):
//   SpeedOfLight.py       latency issue below 60 % of peak on both SM and memory, "high
//                         throughput" above 80 %, balanced within 10 points, small grid
//                         below 1 wave;
//   CPIStall.py           a stall dominates when its share of the cycles between issues
//                         exceeds 0.3 and fewer than 0.8 instructions issue per cycle;
//   TheoreticalOccupancy.py  theoretical occupancy below 80 %;
//   AchievedOccupancy.py  achieved occupancy 10 points below theoretical;
//   SharedMemoryConflicts.py bank conflicts at 10 % of shared wavefronts or more;
//   ThreadDivergence.py   fewer than 24 active threads per executed instruction;
//   IssueSlotUtilization.py  fewer than 0.6 instructions issued per cycle per scheduler.
// Uncoalesced access uses ncu's bytes-per-sector metric; kopt reports it when at least 20 %
// of each fetched sector is wasted (ncu's MemoryCacheAccessPattern flags any waste).
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kopt/tools/ncu_csv.hpp"

namespace kopt {

enum class BottleneckClass {
  memory_bound,
  compute_bound,
  latency_bound,
  occupancy_limited,
  small_grid,
  synchronization_bound,
  unknown,  // the metrics needed are missing
};
std::string_view bottleneck_name(BottleneckClass c);

struct Evidence {
  std::string metric;
  double value = 0;
  std::string unit;
  std::string test;  // "85.2 >= 80"
};

struct Finding {
  std::string id;       // "uncoalesced_global", "bank_conflicts", "local_spills", "divergence", ...
  std::string summary;  // one line a person reads
  std::string rule;
  std::vector<Evidence> evidence;
};

struct Bottleneck {
  BottleneckClass cls = BottleneckClass::unknown;
  std::string limiter;  // "DRAM", "FMA pipe", "registers", "long_scoreboard", ...
  std::string rule;     // the rule that fired, in words
  std::vector<Evidence> evidence;
  std::vector<Finding> secondary;
  std::vector<std::string> missing;  // metrics that were needed and not there
};

Bottleneck classify_bottleneck(const MetricValues& m);

// The busiest unit of a list of (label, metric) pairs, by its % of peak: {label, %}, or
// {"", -1} when none of the metrics is there.
std::pair<std::string, double> busiest(
    const MetricValues& m, std::initializer_list<std::pair<const char*, const char*>> units);

}  // namespace kopt
