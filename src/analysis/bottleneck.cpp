#include "kopt/analysis/bottleneck.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kopt/analysis/roofline.hpp"

namespace kopt {
namespace {

constexpr double k_latency_pct = 60;        // SpeedOfLight.py latency_bound_threshold
constexpr double k_high_pct = 80;           // SpeedOfLight.py no_bound_threshold
constexpr double k_balanced_pts = 10;       // SpeedOfLight.py balanced_threshold
constexpr double k_waves = 1;               // SpeedOfLight.py waves_threshold
constexpr double k_stall_ratio = 0.3;       // CPIStall.py ratio_threshold
constexpr double k_issue_active = 0.8;      // CPIStall.py issue_active_threshold
constexpr double k_theoretical_occ = 80;    // TheoreticalOccupancy.py low_theoretical_threshold
constexpr double k_achieved_gap = 10;       // AchievedOccupancy.py occupancy_difference_threshold
constexpr double k_bank_conflict_pct = 10;  // SharedMemoryConflicts.py
constexpr double k_active_threads = 24;     // ThreadDivergence.py
constexpr double k_issue_target = 0.6;      // IssueSlotUtilization.py issueActiveTarget
constexpr double k_sector_waste = 0.2;      // kopt's floor for reporting uncoalesced access
constexpr double k_tensor_runs_pct = 1;  // kopt's: a tensor-core kernel (an f32 one reads 0.02 %)
constexpr double k_tensor_fed_pct = 50;  // kopt's: a tensor pipe below half active is not fed
constexpr double k_lsu_busy_pct = 25;    // kopt's: the LSU pipe takes a quarter of its issue rate

const char* k_sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const char* k_mem = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
const char* k_dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const char* k_waves_metric = "launch__waves_per_multiprocessor";
const char* k_issue = "smsp__issue_active.avg.per_cycle_active";
const char* k_theoretical = "sm__maximum_warps_per_active_cycle_pct";
const char* k_achieved = "sm__warps_active.avg.pct_of_peak_sustained_active";

std::string num(double v) {
  return fmt::format("{:.3g}", v);
}

Evidence ev(const MetricValues& m, const std::string& name, const std::string& unit,
            const std::string& test = "") {
  return Evidence{name, metric(m, name).value_or(0), unit, test};
}

void throughput_bound(const MetricValues& m, double sm, double mem, Bottleneck& b) {
  bool memory = mem >= sm;
  double diff = std::fabs(sm - mem);
  std::string regime =
      std::max(sm, mem) >= k_high_pct ? "high throughput (>= 80 % of peak)" : "60-80 % of peak";
  b.rule =
      diff >= k_balanced_pts
          ? fmt::format("{}; {} leads by {:.1f} points (>= {})", regime, memory ? "memory" : "SM",
                        diff, k_balanced_pts)
          : fmt::format("{}; balanced (SM and memory within {} points), the larger names the class",
                        regime, k_balanced_pts);
  b.evidence.push_back(ev(m, k_sm, "%", num(sm) + (memory ? " <= " : " > ") + num(mem)));
  b.evidence.push_back(ev(m, k_mem, "%", num(mem) + " >= " + num(k_latency_pct)));
  if (memory) {
    b.cls = BottleneckClass::memory_bound;
    auto unit = busiest(m, {{"DRAM", k_dram},
                            {"L2", "lts__throughput.avg.pct_of_peak_sustained_elapsed"},
                            {"L1/shared", "l1tex__throughput.avg.pct_of_peak_sustained_active"}});
    b.limiter = unit.first;
    if (metric(m, k_dram)) b.evidence.push_back(ev(m, k_dram, "%"));
  } else {
    b.cls = BottleneckClass::compute_bound;
    auto pipe = busiest(
        m, {{"tensor pipe", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
            {"FMA pipe", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"},
            {"ALU pipe", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"},
            {"FP64 pipe", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"},
            {"LSU pipe", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"}});
    b.limiter = pipe.first.empty() ? "SM" : pipe.first;
    if (pipe.second >= 0)
      b.evidence.push_back(Evidence{b.limiter, pipe.second, "%", "busiest pipe"});
  }
}

bool occupancy_limited(const MetricValues& m, Bottleneck& b) {
  auto theo = metric(m, k_theoretical);
  auto ach = metric(m, k_achieved);
  if (theo && *theo < k_theoretical_occ) {
    std::pair<const char*, const char*> limits[] = {
        {"registers", "launch__occupancy_limit_registers"},
        {"shared memory", "launch__occupancy_limit_shared_mem"},
        {"warps (block size)", "launch__occupancy_limit_warps"},
        {"blocks per SM (block size)", "launch__occupancy_limit_blocks"}};
    std::string limiter = "?";
    double fewest = 1e300;
    for (auto [label, name] : limits)
      if (auto v = metric(m, name); v && *v < fewest) {
        fewest = *v;
        limiter = label;
      }
    b.cls = BottleneckClass::occupancy_limited;
    b.limiter = limiter;
    b.rule = fmt::format(
        "theoretical occupancy {:.1f} % < {} %; the fewest blocks per SM are allowed by {}", *theo,
        k_theoretical_occ, limiter);
    b.evidence.push_back(ev(m, k_theoretical, "%", num(*theo) + " < " + num(k_theoretical_occ)));
    for (auto [label, name] : limits)
      if (metric(m, name)) b.evidence.push_back(ev(m, name, "blocks"));
    return true;
  }
  if (theo && ach && *theo - *ach >= k_achieved_gap) {
    b.cls = BottleneckClass::occupancy_limited;
    b.limiter = "achieved below theoretical (imbalance or tail)";
    b.rule = fmt::format(
        "achieved occupancy {:.1f} % is {:.1f} points below theoretical {:.1f} % (>= {})", *ach,
        *theo - *ach, *theo, k_achieved_gap);
    b.evidence.push_back(ev(m, k_achieved, "%", num(*theo - *ach) + " >= " + num(k_achieved_gap)));
    b.evidence.push_back(ev(m, k_theoretical, "%"));
    return true;
  }
  return false;
}

void latency_issue(const MetricValues& m, double sm, double mem, Bottleneck& b) {
  std::string base =
      fmt::format("SM {:.1f} % and memory {:.1f} % both < {} % of peak", sm, mem, k_latency_pct);
  b.evidence.push_back(ev(m, k_sm, "%", num(sm) + " < " + num(k_latency_pct)));
  b.evidence.push_back(ev(m, k_mem, "%", num(mem) + " < " + num(k_latency_pct)));
  if (auto waves = metric(m, k_waves_metric); waves && *waves < k_waves) {
    b.cls = BottleneckClass::small_grid;
    b.limiter = "grid";
    b.rule =
        base + fmt::format("; {:.2f} waves < {}: the grid cannot fill the GPU", *waves, k_waves);
    b.evidence.push_back(ev(m, k_waves_metric, "waves", num(*waves) + " < " + num(k_waves)));
    return;
  }
  auto shares = stall_shares(m);
  auto issue = metric(m, k_issue);
  double sync = 0;
  for (const auto& [reason, share] : shares)
    if (reason == "barrier" || reason == "membar") sync += share;
  if (sync > k_stall_ratio && issue && *issue < k_issue_active) {
    b.cls = BottleneckClass::synchronization_bound;
    b.limiter = "barrier/membar";
    b.rule = base +
             fmt::format(
                 "; barrier + membar stalls are {:.0f} % of the cycles between issues (> {:.0f} %)",
                 100 * sync, 100 * k_stall_ratio);
    b.evidence.push_back(Evidence{"stall share barrier+membar", sync, "ratio",
                                  num(sync) + " > " + num(k_stall_ratio)});
    b.evidence.push_back(ev(m, k_issue, "inst/cycle", num(*issue) + " < " + num(k_issue_active)));
    return;
  }
  if (occupancy_limited(m, b)) {
    b.rule = base + "; " + b.rule;
    return;
  }
  b.cls = BottleneckClass::latency_bound;
  if (!shares.empty()) {
    b.limiter = shares.front().first;
    b.rule = base + fmt::format("; warps mostly wait on {} ({:.0f} % of the cycles between issues)",
                                shares.front().first, 100 * shares.front().second);
    b.evidence.push_back(
        Evidence{"stall share " + shares.front().first, shares.front().second, "ratio", "largest"});
  } else {
    b.rule = base;
  }
  if (issue) b.evidence.push_back(ev(m, k_issue, "inst/cycle"));
}

// A tensor-core kernel whose tensor pipe idles while the LSU pipe is busy issuing: its
// operands arrive by too many load instructions (per-thread fragment loads, no ldmatrix) and
// take the issue slots the MMAs need.
void tensor_starved(const MetricValues& m, Bottleneck& b) {
  const char* tensor = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
  const char* lsu = "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active";
  auto t = metric(m, tensor), l = metric(m, lsu);
  if (!t || !l || *t < k_tensor_runs_pct || *t >= k_tensor_fed_pct || *l < k_lsu_busy_pct) return;
  b.secondary.push_back(
      Finding{"tensor_starved",
              fmt::format("tensor cores starved by their operand loads: tensor pipe {:.0f} % "
                          "active while the LSU pipe "
                          "issues at {:.0f} % of its peak",
                          *t, *l),
              fmt::format("tensor pipe {:.0f} to {:.0f} %, LSU pipe >= {:.0f} %", k_tensor_runs_pct,
                          k_tensor_fed_pct, k_lsu_busy_pct),
              // The LSU share under the name ldmatrix's trigger reads it by (method_selection.cpp).
              {ev(m, tensor, "%", num(*t) + " < " + num(k_tensor_fed_pct)),
               Evidence{"kopt__tensor_kernel_lsu_pct", *l, "%",
                        lsu + std::string(" ") + num(*l) + " >= " + num(k_lsu_busy_pct)}}});
}

void secondary_findings(const MetricValues& m, Bottleneck& b) {
  for (auto [op, label] : {std::pair{"ld", "loads"}, std::pair{"st", "stores"}}) {
    std::string name =
        std::string("smsp__sass_average_data_bytes_per_sector_mem_global_op_") + op + ".ratio";
    if (auto bps = metric(m, name); bps && *bps > 0 && *bps <= 32 * (1 - k_sector_waste) + 1e-9)
      b.secondary.push_back(Finding{
          "uncoalesced_global",
          fmt::format("uncoalesced global {}: {:.1f} of 32 bytes used per sector fetched", label,
                      *bps),
          fmt::format("bytes per sector < {:.1f} (>= {:.0f} % wasted)", 32 * (1 - k_sector_waste),
                      100 * k_sector_waste),
          {ev(m, name, "byte/sector", num(*bps) + " < " + num(32 * (1 - k_sector_waste)))}});
  }
  for (const char* op : {"ld", "st"}) {
    std::string c = std::string("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_") + op + ".sum";
    std::string w = std::string("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_") + op + ".sum";
    auto conflicts = metric(m, c), wavefronts = metric(m, w);
    if (conflicts && wavefronts && *wavefronts > 0 &&
        100 * *conflicts / *wavefronts >= k_bank_conflict_pct)
      b.secondary.push_back(Finding{
          "bank_conflicts",
          fmt::format("shared-memory bank conflicts on {}: {:.0f} % of wavefronts",
                      std::string(op) == "ld" ? "loads" : "stores", 100 * *conflicts / *wavefronts),
          fmt::format("conflicts >= {} % of shared wavefronts", k_bank_conflict_pct),
          {ev(m, c, ""), ev(m, w, "")}});
  }
  tensor_starved(m, b);
  double local = metric(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum").value_or(0) +
                 metric(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum").value_or(0);
  if (local > 0)
    b.secondary.push_back(Finding{
        "local_spills",
        fmt::format("local memory traffic: {:.0f} sectors (register spills or local arrays)",
                    local),
        "local load + store sectors > 0",
        {ev(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "sector"),
         ev(m, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "sector")}});
  const char* threads = "smsp__thread_inst_executed_per_inst_executed.ratio";
  if (auto t = metric(m, threads); t && *t < k_active_threads)
    b.secondary.push_back(
        Finding{"divergence",
                fmt::format("warp divergence: {:.1f} of 32 threads active per instruction", *t),
                fmt::format("active threads per instruction < {}", k_active_threads),
                {ev(m, threads, "threads", num(*t) + " < " + num(k_active_threads))}});
  if (b.cls != BottleneckClass::memory_bound && b.cls != BottleneckClass::compute_bound)
    if (auto i = metric(m, k_issue); i && *i < k_issue_target)
      b.secondary.push_back(
          Finding{"low_issue_rate",
                  fmt::format("low issue rate: {:.2f} instructions per cycle per scheduler", *i),
                  fmt::format("issued per cycle < {}", k_issue_target),
                  {ev(m, k_issue, "inst/cycle", num(*i) + " < " + num(k_issue_target))}});
  if (b.cls != BottleneckClass::occupancy_limited && b.cls != BottleneckClass::small_grid) {
    Bottleneck occ;
    if (occupancy_limited(m, occ))
      b.secondary.push_back(
          Finding{"occupancy", "occupancy limited by " + occ.limiter, occ.rule, occ.evidence});
  }
}

}  // namespace

std::pair<std::string, double> busiest(
    const MetricValues& m, std::initializer_list<std::pair<const char*, const char*>> units) {
  std::pair<std::string, double> best{"", -1};
  for (auto [label, name] : units)
    if (auto v = metric(m, name); v && *v > best.second) best = {label, *v};
  return best;
}

std::string_view bottleneck_name(BottleneckClass c) {
  switch (c) {
    case BottleneckClass::memory_bound:
      return "memory-bound";
    case BottleneckClass::compute_bound:
      return "compute-bound";
    case BottleneckClass::latency_bound:
      return "latency-bound";
    case BottleneckClass::occupancy_limited:
      return "occupancy-limited";
    case BottleneckClass::small_grid:
      return "small-grid";
    case BottleneckClass::synchronization_bound:
      return "synchronization-bound";
    case BottleneckClass::unknown:
      return "unknown";
  }
  return "?";
}

Bottleneck classify_bottleneck(const MetricValues& m) {
  Bottleneck b;
  auto sm = metric(m, k_sm);
  auto mem = metric(m, k_mem);
  if (!sm) b.missing.push_back(k_sm);
  if (!mem) b.missing.push_back(k_mem);
  if (!sm || !mem) {
    b.rule =
        "the speed-of-light metrics are missing: profile with the `sol` question (or --ncu-set "
        "basic or more)";
    secondary_findings(m, b);
    return b;
  }
  if (std::max(*sm, *mem) >= k_latency_pct)
    throughput_bound(m, *sm, *mem, b);
  else
    latency_issue(m, *sm, *mem, b);
  secondary_findings(m, b);
  return b;
}

}  // namespace kopt
