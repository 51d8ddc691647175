#include "kopt/tools/ncu_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace kopt {
namespace {

// RFC 4180 fields of one line (ncu quotes every field; commas inside quotes are data).
std::vector<std::string> split_csv_line(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

struct Line {
  int number = 0;
  std::vector<std::string> fields;
};

int column(const std::vector<std::string>& header, std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

std::string field(const std::vector<std::string>& row, int col) {
  return col >= 0 && static_cast<std::size_t>(col) < row.size() ? row[static_cast<std::size_t>(col)]
                                                                : std::string{};
}

// The identity columns both layouts share.
struct IdColumns {
  int id, kernel, block, grid, device, cc;
  explicit IdColumns(const std::vector<std::string>& h)
      : id(column(h, "ID")),
        kernel(column(h, "Kernel Name")),
        block(column(h, "Block Size")),
        grid(column(h, "Grid Size")),
        device(column(h, "Device")),
        cc(column(h, "CC")) {}
  NcuLaunch launch(const std::vector<std::string>& row) const {
    NcuLaunch l;
    l.id = std::atoi(field(row, id).c_str());
    l.kernel = field(row, kernel);
    l.block = field(row, block);
    l.grid = field(row, grid);
    l.device = field(row, device);
    l.cc = field(row, cc);
    return l;
  }
};

void store(NcuLaunch& l, const std::string& name, const std::string& unit,
           const std::string& text) {
  auto v = parse_ncu_number(text);
  if (!v) {
    if (text.empty() || text == "n/a" || text == "N/A" || text == "nan")
      l.unavailable.push_back(name);
    else
      l.attributes[name] = text;
    return;
  }
  auto [scale, base] = ncu_unit_scale(unit);
  l.metrics[name] = *v * scale;
  l.units[name] = base;
}

Expected<NcuReport> parse_wide(const std::vector<Line>& lines, const std::string& source) {
  NcuReport r;
  r.layout = "wide";
  const auto& header = lines[0].fields;
  IdColumns ids(header);
  std::size_t first_metric = static_cast<std::size_t>(std::max(
                                 {ids.id, ids.kernel, ids.block, ids.grid, ids.device, ids.cc})) +
                             1;
  std::size_t row = 1;
  std::vector<std::string> units(header.size());
  // The units row has an empty ID (ncu prints it under the header).
  if (row < lines.size() && field(lines[row].fields, ids.id).empty()) units = lines[row++].fields;
  for (; row < lines.size(); ++row) {
    const auto& f = lines[row].fields;
    if (f.size() != header.size())
      return Unexpected(bad_input("row has " + std::to_string(f.size()) + " fields, the header " +
                                      std::to_string(header.size()) + " (truncated CSV?)",
                                  source, lines[row].number));
    NcuLaunch l = ids.launch(f);
    for (std::size_t c = first_metric; c < header.size(); ++c)
      store(l, header[c], c < units.size() ? units[c] : "", f[c]);
    r.launches.push_back(std::move(l));
  }
  return r;
}

Expected<NcuReport> parse_long(const std::vector<Line>& lines, const std::string& source) {
  NcuReport r;
  r.layout = "long";
  const auto& header = lines[0].fields;
  IdColumns ids(header);
  int section = column(header, "Section Name"), name = column(header, "Metric Name"),
      unit = column(header, "Metric Unit"), value = column(header, "Metric Value");
  for (std::size_t row = 1; row < lines.size(); ++row) {
    const auto& f = lines[row].fields;
    if (f.size() < static_cast<std::size_t>(value) + 1)
      return Unexpected(bad_input("row has " + std::to_string(f.size()) +
                                      " fields, fewer than the header's " +
                                      std::to_string(value + 1) + " (truncated CSV?)",
                                  source, lines[row].number));
    NcuLaunch l = ids.launch(f);
    if (r.launches.empty() || r.launches.back().id != l.id || r.launches.back().kernel != l.kernel)
      r.launches.push_back(std::move(l));
    std::string metric = field(f, name);
    if (metric.empty()) continue;  // a rule's row
    // Labels of the standard sections name what they show; raw metric names pass through.
    std::string mapped = metric_for_label(field(f, section), metric);
    store(r.launches.back(), mapped.empty() ? metric : mapped, field(f, unit), field(f, value));
  }
  return r;
}

}  // namespace

std::optional<double> parse_ncu_number(std::string_view text) {
  std::string s;
  for (char c : text)
    if (c != ',' && c != ' ') s += c;
  if (s.empty() || s == "n/a" || s == "N/A") return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(v)) return std::nullopt;
  return v;
}

std::pair<double, std::string> ncu_unit_scale(std::string_view unit) {
  std::string u(unit);
  std::string per;
  if (auto slash = u.find('/'); slash != std::string::npos) {
    per = u.substr(slash);
    u = u.substr(0, slash);
  }
  struct Scaled {
    const char* name;
    double factor;
    const char* base;
  };
  static const Scaled table[] = {
      {"nsecond", 1, "ns"},     {"usecond", 1e3, "ns"}, {"msecond", 1e6, "ns"},
      {"second", 1e9, "ns"},    {"ns", 1, "ns"},        {"us", 1e3, "ns"},
      {"ms", 1e6, "ns"},        {"byte", 1, "byte"},    {"Kbyte", 1e3, "byte"},
      {"Mbyte", 1e6, "byte"},   {"Gbyte", 1e9, "byte"}, {"Tbyte", 1e12, "byte"},
      {"KB", 1e3, "byte"},      {"MB", 1e6, "byte"},    {"GB", 1e9, "byte"},
      {"hz", 1, "hz"},          {"Khz", 1e3, "hz"},     {"Mhz", 1e6, "hz"},
      {"Ghz", 1e9, "hz"},       {"cycle", 1, "cycle"},  {"Kcycle", 1e3, "cycle"},
      {"Mcycle", 1e6, "cycle"}, {"inst", 1, "inst"},    {"Kinst", 1e3, "inst"},
      {"Minst", 1e6, "inst"},   {"Ginst", 1e9, "inst"},
  };
  // A rate "X/second" keeps its per-second base: Gbyte/second -> byte/s.
  if (per == "/second" || per == "/s") {
    for (const auto& s : table)
      if (u == s.name) return {s.factor, std::string(s.base) + "/s"};
    return {1, u + "/s"};
  }
  if (!per.empty()) return {1, std::string(unit)};
  for (const auto& s : table)
    if (u == s.name) {
      // Times other than ns scale from their own unit to ns; "second" alone is a time.
      return {s.factor, s.base};
    }
  return {1, u};
}

std::string metric_for_label(std::string_view section, std::string_view label) {
  struct Entry {
    const char* section;  // "" matches any section
    const char* label;
    const char* metric;
  };
  static const Entry table[] = {
      {"GPU Speed Of Light Throughput", "Duration", "gpu__time_duration.sum"},
      {"GPU Speed Of Light Throughput", "Compute (SM) Throughput",
       "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"GPU Speed Of Light Throughput", "Memory Throughput",
       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"},
      {"GPU Speed Of Light Throughput", "DRAM Throughput",
       "dram__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"GPU Speed Of Light Throughput", "L1/TEX Cache Throughput",
       "l1tex__throughput.avg.pct_of_peak_sustained_active"},
      {"GPU Speed Of Light Throughput", "L2 Cache Throughput",
       "lts__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"GPU Speed Of Light Throughput", "SM Frequency", "sm__cycles_elapsed.avg.per_second"},
      {"GPU Speed Of Light Throughput", "DRAM Frequency", "dram__cycles_elapsed.avg.per_second"},
      {"GPU Speed Of Light Throughput", "Elapsed Cycles", "sm__cycles_elapsed.max"},
      {"GPU Speed Of Light Throughput", "SM Active Cycles", "sm__cycles_active.avg"},
      {"Compute Workload Analysis", "Issue Slots Busy",
       "smsp__issue_active.avg.pct_of_peak_sustained_active"},
      {"Memory Workload Analysis", "L1/TEX Hit Rate", "l1tex__t_sector_hit_rate.pct"},
      {"Memory Workload Analysis", "L2 Hit Rate", "lts__t_sector_hit_rate.pct"},
      {"Memory Workload Analysis", "Local Memory Spilling Requests",
       "derived__local_spilling_requests"},
      {"Warp State Statistics", "Warp Cycles Per Issued Instruction",
       "smsp__average_warps_active_per_issue_active.ratio"},
      {"Warp State Statistics", "Avg. Active Threads Per Warp",
       "smsp__thread_inst_executed_per_inst_executed.ratio"},
      {"Instruction Statistics", "Executed Instructions", "smsp__inst_executed.sum"},
      {"Launch Statistics", "Block Size", "launch__block_size"},
      {"Launch Statistics", "Grid Size", "launch__grid_size"},
      {"Launch Statistics", "Registers Per Thread", "launch__registers_per_thread"},
      {"Launch Statistics", "Static Shared Memory Per Block",
       "launch__shared_mem_per_block_static"},
      {"Launch Statistics", "Dynamic Shared Memory Per Block",
       "launch__shared_mem_per_block_dynamic"},
      {"Launch Statistics", "# SMs", "device__attribute_multiprocessor_count"},
      {"Launch Statistics", "Threads", "launch__thread_count"},
      {"Launch Statistics", "Waves Per SM", "launch__waves_per_multiprocessor"},
      {"Occupancy", "Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"},
      {"Occupancy", "Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"Occupancy", "Block Limit Registers", "launch__occupancy_limit_registers"},
      {"Occupancy", "Block Limit Shared Mem", "launch__occupancy_limit_shared_mem"},
      {"Occupancy", "Block Limit Warps", "launch__occupancy_limit_warps"},
      {"Occupancy", "Block Limit SM", "launch__occupancy_limit_blocks"},
  };
  for (const auto& e : table)
    if (label == e.label && section == e.section) return e.metric;
  return {};
}

Expected<NcuReport> parse_ncu_csv(std::string_view text, const std::string& source) {
  std::vector<Line> lines;
  std::vector<std::string> messages;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++number;
    if (line.starts_with("==")) {
      messages.emplace_back(line);
      continue;
    }
    if (line.empty() || line == "\r") continue;
    if (!line.starts_with("\"")) {
      if (lines.empty()) continue;  // the profiled program's own output, before the table
      return Unexpected(bad_input("not a CSV row of ncu: '" + std::string(line.substr(0, 60)) + "'",
                                  source, number));
    }
    lines.push_back(Line{number, split_csv_line(line)});
  }
  for (const auto& m : messages)
    if (m.find("ERR_NVGPUCTRPERM") != std::string::npos)
      return Unexpected(environment_error(
          source + ": ncu could not read the GPU's performance counters (ERR_NVGPUCTRPERM)"));
  if (lines.empty())
    return Unexpected(bad_input(messages.empty()
                                    ? "no ncu CSV table in it (empty, or output of another tool)"
                                    : "no ncu CSV table in it; ncu said: " + messages.back(),
                                source, 1));
  const auto& header = lines[0].fields;
  if (column(header, "ID") < 0 || column(header, "Kernel Name") < 0)
    return Unexpected(
        bad_input("the first row is not ncu's header (no \"ID\" and \"Kernel Name\" columns)",
                  source, lines[0].number));
  bool is_long = column(header, "Metric Name") >= 0 && column(header, "Metric Value") >= 0;
  auto r = is_long ? parse_long(lines, source) : parse_wide(lines, source);
  if (!r) return r;
  if (r->launches.empty())
    return Unexpected(
        bad_input("the CSV has a header but no kernel rows", source, lines[0].number));
  r->messages = std::move(messages);
  // ncu's SOL section shows DRAM throughput as gpu__dram_throughput; keep one name.
  for (auto& l : r->launches)
    if (!l.metrics.contains("dram__throughput.avg.pct_of_peak_sustained_elapsed"))
      if (auto it = l.metrics.find("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
          it != l.metrics.end())
        l.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = it->second;
  return r;
}

Expected<NcuKernelProfile> select_kernel(const NcuReport& report, const std::string& name) {
  std::map<std::string, double> total_ns;
  std::vector<std::string> order;
  for (const auto& l : report.launches) {
    if (!total_ns.contains(l.kernel)) order.push_back(l.kernel);
    auto it = l.metrics.find("gpu__time_duration.sum");
    total_ns[l.kernel] += it == l.metrics.end() ? 0.0 : it->second;
  }
  std::string chosen;
  if (!name.empty()) {
    for (const auto& k : order)
      if (k == name) chosen = k;
    if (chosen.empty())
      for (const auto& k : order)
        if (k.find(name) != std::string::npos && chosen.empty()) chosen = k;
    if (chosen.empty()) {
      std::string known;
      for (const auto& k : order) known += (known.empty() ? "" : ", ") + k;
      return Unexpected(
          bad_input("no kernel named '" + name + "' in the report (it has: " + known + ")"));
    }
  } else {
    double best = -1;
    for (const auto& k : order)
      if (total_ns[k] > best) {
        best = total_ns[k];
        chosen = k;
      }
  }
  NcuKernelProfile p;
  p.kernel = chosen;
  std::map<std::string, std::pair<double, int>> sums;
  for (const auto& l : report.launches) {
    if (l.kernel != chosen) continue;
    ++p.launches;
    p.launch_ids.push_back(l.id);
    for (const auto& [k, v] : l.metrics) {
      sums[k].first += v;
      sums[k].second += 1;
    }
  }
  for (const auto& [k, s] : sums) p.metrics[k] = s.first / s.second;
  for (const auto& k : order)
    if (k != chosen) p.other_kernels.push_back(k);
  return p;
}

}  // namespace kopt
