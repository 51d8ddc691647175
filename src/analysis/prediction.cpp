#include "kopt/analysis/prediction.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "kopt/analysis/roofline.hpp"
#include "kopt/core/units.hpp"

namespace kopt {

const std::vector<std::pair<std::string, std::string>>& prediction_aliases() {
  static const std::vector<std::pair<std::string, std::string>> a = {
      {"time", k_time_metric},
      {"dram_throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"memory_throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"},
      {"sm_throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"l2_throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"l1_throughput", "l1tex__throughput.avg.pct_of_peak_sustained_active"},
      {"fma_pipe", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"},
      {"alu_pipe", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"},
      {"tensor_pipe", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
      {"occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"issue_active", "smsp__issue_active.avg.per_cycle_active"},
      {"dram_bytes_read", "dram__bytes_read.sum"},
      {"dram_bytes_write", "dram__bytes_write.sum"},
      {"bytes_per_sector_ld", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"},
      {"bytes_per_sector_st", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"},
      {"bank_conflicts_ld", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"},
      {"bank_conflicts_st", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"},
      {"local_sectors", "kopt__local_sectors"},
      {"memory_roof_pct", "kopt__memory_roof_pct"},
      {"compute_roof_pct", "kopt__compute_roof_pct"},
      {"waves", "launch__waves_per_multiprocessor"},
      {"registers", "launch__registers_per_thread"},
  };
  return a;
}

namespace {

std::string resolve(const std::string& name) {
  for (const auto& [alias, full] : prediction_aliases())
    if (alias == name) return full;
  if (name.starts_with("stall_"))
    return "kopt__stall_share_" + name.substr(6);  // stall_long_scoreboard
  return name;
}

std::string number(double v) {
  return fmt::format("{:.4g}", v);
}

}  // namespace

Expected<Prediction> parse_prediction(const std::string& text, const std::string& field) {
  auto fail = [&](const std::string& why) {
    return Unexpected(
        bad_input("'" + text + "': " + why + " (METRIC:up|down[:AMOUNT], AMOUNT like 10% or 5)", "",
                  0, field));
  };
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(':', start)) != std::string::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  if (parts.size() < 2 || parts.size() > 3) return fail("expected two or three fields");
  Prediction p;
  p.text = text;
  if (parts[0].empty()) return fail("no metric");
  p.metric = resolve(parts[0]);
  if (parts[1] != "up" && parts[1] != "down")
    return fail("the direction is '" + parts[1] + "', not up or down");
  p.direction = parts[1];
  if (parts.size() == 3) {
    std::string a = parts[2];
    if (!a.empty() && a.back() == '%') {
      p.relative = true;
      a.pop_back();
    }
    char* end = nullptr;
    double v = std::strtod(a.c_str(), &end);
    if (a.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
      return fail("the amount '" + parts[2] + "' is not a positive number");
    p.amount = p.relative ? v / 100.0 : v;
  }
  return p;
}

std::optional<std::string> unknown_metric(const Prediction& p, const MetricValues& known) {
  if (p.metric == k_time_metric || known.contains(p.metric)) return std::nullopt;
  for (const auto& [alias, full] : prediction_aliases())
    if (full == p.metric) return std::nullopt;  // an alias: the candidate's profile may have it
  if (p.metric.starts_with("kopt__stall_share_")) return std::nullopt;
  std::string aliases;
  for (const auto& [alias, full] : prediction_aliases())
    aliases += (aliases.empty() ? "" : ", ") + alias;
  return "'" + p.metric +
         "' is not a metric of this iteration's profile; use time, stall_<reason>, one of " +
         aliases + ", or a metric name from the open's profile";
}

void judge_prediction(Prediction& p, const MetricValues& before, const MetricValues& after) {
  auto b = before.find(p.metric), a = after.find(p.metric);
  if (b == before.end() || a == after.end()) {
    leave_unjudged(p, b == before.end() ? "no value before (the open's profile lacks it)"
                                        : "no value after (the candidate's profile lacks it)");
    return;
  }
  p.before = b->second;
  p.after = a->second;
  double delta = a->second - b->second;
  double scale =
      std::fabs(b->second) > 0 ? std::fabs(b->second) : std::max(std::fabs(a->second), 1e-30);
  double rel = delta / scale;
  double signed_move = p.direction == "up" ? delta : -delta;
  double signed_rel = p.direction == "up" ? rel : -rel;
  auto shown = [&](double v) { return p.metric == k_time_metric ? human_time(v) : number(v); };
  std::string moved =
      fmt::format("{} -> {} ({:+.1f} %)", shown(b->second), shown(a->second), 100 * rel);
  if (signed_rel <= 0.01) {
    p.verdict = PredictionVerdict::refuted;
    p.note = moved + (std::fabs(rel) <= 0.01 ? ": no change beyond 1 %" : ": moved the other way");
    return;
  }
  double needed = p.amount ? *p.amount : 0;
  double got = p.relative ? signed_rel : signed_move;
  if (got + 1e-12 >= needed) {
    p.verdict = PredictionVerdict::confirmed;
    p.note = moved;
  } else {
    p.verdict = PredictionVerdict::fell_short;
    p.note = moved + fmt::format(": {} expected", p.relative ? fmt::format("{:.1f} %", 100 * needed)
                                                             : number(needed));
  }
}

void leave_unjudged(Prediction& p, const std::string& why) {
  p.verdict = PredictionVerdict::unmeasured;
  p.note = why;
}

std::string prediction_line(const Prediction& p) {
  return fmt::format("`{}` — {}{}", p.text,
                     p.verdict == PredictionVerdict::not_judged ? "not judged" : name_of(p.verdict),
                     p.note.empty() ? "" : ": " + p.note);
}

void to_json(nlohmann::json& j, const Prediction& p) {
  j = {{"branch", p.branch},
       {"text", p.text},
       {"metric", p.metric},
       {"direction", p.direction},
       {"amount", kopt::to_json(p.amount)},
       {"relative", p.relative},
       {"before", kopt::to_json(p.before)},
       {"after", kopt::to_json(p.after)},
       {"verdict", p.verdict},
       {"note", p.note}};
}

void from_json(const nlohmann::json& j, Prediction& p) {
  auto opt = [&](const char* k) -> std::optional<double> {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>())
                                            : std::nullopt;
  };
  p.branch = j.value("branch", "");
  p.text = j.value("text", "");
  p.metric = j.value("metric", "");
  p.direction = j.value("direction", "");
  p.amount = opt("amount");
  p.relative = j.value("relative", false);
  p.before = opt("before");
  p.after = opt("after");
  p.verdict = j.value("verdict", PredictionVerdict::not_judged);
  p.note = j.value("note", "");
}

}  // namespace kopt
