// report.md, benchmark.md and the leaderboard, in markdown, from RunReport records.
#include <fmt/format.h>

#include <algorithm>

#include "kopt/measure/review.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "report_sections.hpp"

namespace kopt {
namespace {

std::string time_or_dash(double s) {
  return s > 0 ? human_time(s) : "—";
}

std::string methods_cell(const VersionRecord& v) {
  auto notes = report_detail::method_notes(v);
  return notes.empty() ? "—" : fmt::format("{}", fmt::join(notes, "; "));
}

void render(std::string& out, const std::vector<report_detail::ReportSection>& sections) {
  for (const auto& s : sections) {
    if (s.items.empty() && s.empty.empty()) continue;
    out += "\n## " + s.title + "\n\n";
    if (!s.intro.empty()) out += s.intro + "\n\n";
    if (s.items.empty()) out += s.empty + "\n";
    for (const auto& i : s.items)
      out += "- " + (i.label.empty() ? "" : "**" + i.label + "**: ") + i.text + "\n";
  }
}

std::string roof_text(const RoofUse& r) {
  return fmt::format("{} {} ({}: {})", human_rate(r.rate, r.unit), r.name, r.origin, r.source);
}

void gaps_section(std::string& out, const RunReport& r) {
  render(out, report_detail::gaps_sections(r));
}

}  // namespace

std::string report_markdown(const RunReport& r) {
  std::string out = fmt::format("# {}: optimization report\n\n", r.title());
  if (!r.state) {
    gaps_section(out, r);
    return out;
  }
  const RunState& s = *r.state;
  out += fmt::format(
      "Device: {} · started {} · {} iterations · {}\n\n", s.device, s.created_at, s.iteration,
      s.status == RunPhase::finished ? "stopped: " + s.stop_reason : "still running");
  out += "## Headline\n\n";
  if (r.baseline && r.best && r.best != r.baseline) {
    out +=
        fmt::format("**{} → {}** ({} → {}), **{:.2f}× faster**", time_or_dash(r.baseline->median_s),
                    time_or_dash(r.best->median_s), "v0 " + r.baseline->kernel,
                    fmt::format("v{} {}", r.best->index, r.best->kernel), *r.speedup());
    if (auto pct = r.pct_of_roof(*r.best); pct && r.roof)
      out += fmt::format(", {:.0f} % of the {} ceiling: {}", *pct, r.bound, roof_text(*r.roof));
    out += ".\n";
  } else if (r.baseline) {
    out += fmt::format("No version beat the baseline v0 {} at {}.\n", r.baseline->kernel,
                       time_or_dash(r.baseline->median_s));
  } else {
    out += "No successful version.\n";
  }
  out +=
      "\n## Versions\n\n| v | outcome | time | vs v0 | % of roof | bottleneck at the start | "
      "hypothesis | methods (class, attribution) |\n"
      "|---|---|---:|---:|---:|---|---|---|\n";
  for (const auto& view : r.versions) {
    const VersionRecord& v = view.record;
    auto pct = r.pct_of_roof(v);
    std::string vs = r.baseline && v.median_s > 0
                         ? fmt::format("{:.2f}×", r.baseline->median_s / v.median_s)
                         : "—";
    std::string hyp = report_detail::hypothesis_text(view);
    std::replace(hyp.begin(), hyp.end(), '\n', ' ');
    out += fmt::format(
        "| v{}{} | {} | {} | {} | {} | {} | {} | {} |\n", v.index, v.masked ? " (masked)" : "",
        v.outcome, time_or_dash(v.median_s), vs, pct ? fmt::format("{:.0f} %", *pct) : "—",
        v.bottleneck.empty() ? "—" : v.bottleneck, hyp.empty() ? "—" : hyp, methods_cell(v));
  }
  render(out, report_detail::closing_sections(r));
  return out;
}

std::string benchmark_markdown(const RunReport& r) {
  std::string out = fmt::format("# {}: benchmark\n\n", r.title());
  if (!r.state) {
    gaps_section(out, r);
    return out;
  }
  const RunState& s = *r.state;
  out += fmt::format(
      "Device: {}. Cold L2 (flushed before each sample), medians of event-timed launches.\n\n",
      s.device);
  out +=
      "| implementation | median | noise | samples | vs baseline | clocks after "
      "|\n|---|---:|---:|---:|---:|---|\n";
  auto row = [&](const std::string& name, const EvaluationRecord* e, double median, double noise) {
    std::string clocks = e && !e->clocks.empty() ? e->clocks : "not recorded";
    std::string samples = e ? std::to_string(e->samples) : "—";
    std::string vs =
        r.baseline && median > 0 ? fmt::format("{:.2f}×", r.baseline->median_s / median) : "—";
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} |\n", name, time_or_dash(median),
                    median > 0 ? fmt::format("±{:.2f} %", 100 * noise) : "—", samples, vs, clocks);
  };
  if (r.best && r.best != r.baseline)
    row(fmt::format("best: v{} {} {}", r.best->index, r.best->kernel,
                    point_to_string(r.best->point)),
        s.find_evaluation(r.best->evaluation), r.best->median_s, r.best->noise);
  if (r.baseline)
    row("baseline: v0 " + r.baseline->kernel, s.find_evaluation(r.baseline->evaluation),
        r.baseline->median_s, r.baseline->noise);
  if (s.reference)
    row("reference implementation", &*s.reference, s.reference->median_s, s.reference->noise);
  for (const auto& b : s.baselines) {
    if (b.status == VariantStatus::ok)
      row("PyTorch: " + b.kernel, &b, b.median_s, b.noise);
    else {
      std::string why = b.error;
      std::replace(why.begin(), why.end(), '|', '/');  // a table cell
      out += fmt::format("| PyTorch: {} | {} | — | — | — | {} |\n", b.kernel, b.status, why);
    }
  }
  if (r.roof) out += fmt::format("\nCeiling used: {}.\n", roof_text(*r.roof));
  gaps_section(out, r);
  return out;
}

std::string leaderboard_markdown(const std::vector<RunReport>& runs) {
  std::vector<const RunReport*> sorted;
  for (const auto& r : runs) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return a->speedup().value_or(0) > b->speedup().value_or(0);
  });
  std::string out =
      "# Leaderboard\n\n| # | operator | device | baseline | best | speedup | % of ceiling | "
      "ceiling |\n"
      "|---:|---|---|---:|---:|---:|---:|---|\n";
  int rank = 0;
  for (const RunReport* r : sorted) {
    auto pct = r->best ? r->pct_of_roof(*r->best) : std::nullopt;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", ++rank, r->title(),
                       r->state ? r->state->device : "?",
                       r->baseline ? time_or_dash(r->baseline->median_s) : "—",
                       r->best ? time_or_dash(r->best->median_s) : "—",
                       r->speedup() ? fmt::format("{:.2f}×", *r->speedup()) : "—",
                       pct ? fmt::format("{:.0f} %", *pct) : "—",
                       r->roof ? r->roof->name + " (" + r->roof->origin + ")" : "unknown");
  }
  return out;
}

}  // namespace kopt
