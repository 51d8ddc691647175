#include "kopt/report/explanation_markdown.hpp"

#include <fmt/format.h>

#include "kopt/tools/ncu.hpp"

namespace kopt {
namespace {

std::string opt_pct(const std::optional<double>& gap) {
  return gap ? fmt::format("{:.2f}", *gap) : "n/a";
}

void evidence_table(std::string& out, const std::vector<Evidence>& ev) {
  if (ev.empty()) return;
  out += "| metric | value | test |\n|---|---:|---|\n";
  for (const auto& e : ev)
    out += fmt::format("| `{}` | {:.4g} {} | {} |\n", e.metric, e.value, e.unit, e.test);
}

std::string roof_line(const std::optional<Roof>& r, const std::string& unit) {
  if (!r) return "none";
  return fmt::format("{} ({}, {})", human_rate(r->rate, unit),
                     r->origin == "measured" ? "measured" : "spec", r->source);
}

}  // namespace

std::string summary_markdown(const Explanation& e, const ProfileProvenance& p) {
  std::string out = fmt::format("# {}{}\n\n", p.problem.empty() ? "" : p.problem + ": ", e.kernel);
  if (!p.variant.empty()) out += fmt::format("Variant: {}  \n", p.variant);
  if (!p.device.empty()) out += fmt::format("Device: {}  \n", p.device);
  out += fmt::format("Time: {} ({})  \n", human_time(e.time_s), e.time_source);
  if (e.launches > 1) out += fmt::format("Averaged over {} launches.  \n", e.launches);
  out += fmt::format("\n## Bottleneck: {}{}\n\n", bottleneck_name(e.bottleneck.cls),
                     e.bottleneck.limiter.empty() ? "" : " (" + e.bottleneck.limiter + ")");
  out += "Rule: " + e.bottleneck.rule + "\n\n";
  evidence_table(out, e.bottleneck.evidence);
  if (!e.bottleneck.secondary.empty()) {
    out += "\n### Secondary findings\n\n";
    for (const auto& f : e.bottleneck.secondary)
      out += fmt::format("- {} — rule: {}\n", f.summary, f.rule);
  }
  out += "\n## Roofline\n\n";
  out += fmt::format("- compute roof ({}): {}\n", e.precision,
                     roof_line(e.roofline.compute, "FLOP/s"));
  out += fmt::format("- memory roof: {}\n", roof_line(e.roofline.memory, "B/s"));
  if (e.roofline.ridge > 0)
    out += fmt::format("- ridge point: {:.3g} FLOP/byte\n", e.roofline.ridge);
  if (!e.roofline.points.empty()) {
    out +=
        "\n| basis | FLOPs | bytes | FLOP/byte | achieved | % compute roof | % memory roof | bound "
        "|\n"
        "|---|---:|---:|---:|---:|---:|---:|---|\n";
    for (const auto& pt : e.roofline.points)
      out +=
          fmt::format("| {} | {:.4g} | {:.4g} | {:.3g} | {} , {} | {:.1f} | {:.1f} | {} |\n",
                      pt.basis, pt.flops, pt.bytes, pt.intensity,
                      human_rate(pt.flop_rate, "FLOP/s"), human_rate(pt.byte_rate, "B/s"),
                      pt.pct_compute_roof, pt.pct_memory_roof, pt.bound.empty() ? "?" : pt.bound);
  }
  out += fmt::format("\nGaps: Δc = {}, Δm = {}, Δl = {}{}{}\n", opt_pct(e.gaps.compute),
                     opt_pct(e.gaps.memory), opt_pct(e.gaps.latency),
                     e.gaps.top_stall.empty() ? "" : " (" + e.gaps.top_stall + ")",
                     e.gaps.near_peak ? " — near peak (all three < 0.15)" : "");
  std::vector<std::string> notes = e.notes;
  notes.insert(notes.end(), e.roofline.notes.begin(), e.roofline.notes.end());
  if (!notes.empty()) {
    out += "\n## Notes\n\n";
    for (const auto& n : notes) out += "- " + n + "\n";
  }
  if (!p.csv_file.empty() || !p.report_file.empty()) {
    out += "\n## Files\n\n";
    if (!p.report_file.empty()) out += "- Nsight Compute report: `" + p.report_file + "`\n";
    if (!p.csv_file.empty()) out += "- raw metrics (CSV): `" + p.csv_file + "`\n";
  }
  return out;
}

std::string details_markdown(const Explanation& e, const ProfileProvenance& p) {
  std::string out = fmt::format("# {}: all collected metrics\n\n", e.kernel);
  if (!p.ncu_version.empty()) out += "ncu: " + p.ncu_version + "  \n";
  if (!p.collection.empty()) out += "Collected: " + p.collection + "  \n";
  if (!p.command.empty()) out += "\n```\n" + p.command + "\n```\n";
  if (!e.other_kernels.empty()) {
    out += "\nOther kernels in the report (not analysed): ";
    for (std::size_t i = 0; i < e.other_kernels.size(); ++i)
      out += (i ? ", " : "") + e.other_kernels[i];
    out += "\n";
  }
  MetricValues rest = e.metrics;
  for (const auto& q : ncu_questions()) {
    std::string rows;
    for (const auto& name : q.metrics)
      if (auto it = rest.find(name); it != rest.end()) {
        rows += fmt::format("| `{}` | {:.6g} |\n", name, it->second);
        rest.erase(it);
      }
    if (rows.empty()) continue;
    out += fmt::format("\n## {} — {}\n\n| metric | value |\n|---|---:|\n{}", q.id, q.description,
                       rows);
  }
  auto shares = stall_shares(e.metrics);
  if (!shares.empty()) {
    out +=
        "\n## Stall shares (of the cycles between two issued instructions)\n\n| reason | share "
        "|\n|---|---:|\n";
    for (const auto& [r, s] : shares) out += fmt::format("| {} | {:.3f} |\n", r, s);
  }
  if (!rest.empty()) {
    out += fmt::format("\n## Other metrics ({})\n\n| metric | value |\n|---|---:|\n", rest.size());
    for (const auto& [k, v] : rest) out += fmt::format("| `{}` | {:.6g} |\n", k, v);
  }
  return out;
}

std::string spec_markdown(const GpuSpec& s) {
  std::string out =
      fmt::format("# {} ({})\n\nid `{}`, {} `{}`, matches device names containing: ", s.name,
                  s.vendor, s.id, s.vendor == "AMD" ? "target" : "arch", s.arch);
  for (std::size_t i = 0; i < s.match.size(); ++i)
    out += (i ? ", " : "") + std::string("\"") + s.match[i] + "\"";
  out += "\n\n| field | value | unit | source |\n|---|---:|---|---|\n";
  for (const auto& f : spec_fields()) {
    const SpecValue* v = s.find(f.name);
    std::string value = !v               ? "UNKNOWN"
                        : v->unsupported ? "unsupported"
                                         : fmt::format("{:g}", *v->value);
    out += fmt::format("| {} | {} | {} | {} |\n", f.name, value, f.unit,
                       v ? s.citation(f.name) : "no source");
  }
  return out;
}

std::string spec_table_markdown(const std::vector<GpuSpec>& specs) {
  std::string out =
      "| id | name | SMs | FP32 TFLOP/s | BF16 TFLOP/s | FP8 TFLOP/s | memory GB/s "
      "|\n|---|---|---:|---:|---:|---:|---:|\n";
  auto cell = [](const GpuSpec& s, const char* f) {
    const SpecValue* v = s.find(f);
    return !v               ? std::string("UNKNOWN")
           : v->unsupported ? std::string("—")
                            : fmt::format("{:g}", *v->value);
  };
  for (const auto& s : specs)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", s.id, s.name, cell(s, "sm_count"),
                       cell(s, "fp32_tflops"), cell(s, "bf16_tflops"), cell(s, "fp8_tflops"),
                       cell(s, "memory_bandwidth_gbs"));
  return out + "\n`kopt specs ID` shows every field with its source.\n";
}

}  // namespace kopt

namespace kopt {

std::string advice_markdown(const Advice& a) {
  std::string out = "\n## What next\n\n";
  out += "Headroom: " + a.headroom.summary + ".\n";
  for (Axis axis : {Axis::compute, Axis::memory, Axis::latency})
    if (const auto& x = a.headroom.of(axis); !x.text.empty())
      out += fmt::format("- {}: {}\n", axis_name(axis), x.text);
  out +=
      fmt::format("\nBudget ({}): {}; KernelFlow's gaps would give {}.\n\n",
                  budget_formula_name(a.formula), a.budget.to_string(), a.kernelflow.to_string());
  if (a.stop) out += "**Stop:** " + a.stop_reason + ".\n";
  for (const auto& s : a.suggestions)
    out += fmt::format("{}. **{}** ({}{}{}): {}. Expect {}. {}\n", s.rank, s.method,
                       axis_name(s.axis), s.triggered ? ", triggered" : "",
                       s.within_budget ? ", within the budget" : "", s.why, s.expect(), s.playbook);
  if (!a.notes.empty()) {
    out += "\nNot suggested:\n";
    for (const auto& n : a.notes) out += "- " + n + "\n";
  }
  return out;
}

}  // namespace kopt
