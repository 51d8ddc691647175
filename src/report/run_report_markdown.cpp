// report.md, benchmark.md and the leaderboard, in markdown, from RunReport records.
#include <fmt/format.h>

#include <algorithm>

#include "kopt/measure/review.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"

namespace kopt {
namespace {

std::string time_or_dash(double s) {
  return s > 0 ? human_time(s) : "—";
}

std::string methods_cell(const VersionRecord& v) {
  std::string out;
  for (const auto& m : v.methods) {
    auto o = v.method_outcomes.find(m);
    auto ms = v.attribution_ms.find(m);
    auto pct = v.attribution_pct.find(m);
    out += (out.empty() ? "" : "; ") + m;
    if (o != v.method_outcomes.end()) out += " — " + std::string(name_of(o->second));
    if (ms != v.attribution_ms.end())
      out += fmt::format(
          " ({:+.3g} us{})", ms->second * 1e3,
          pct != v.attribution_pct.end() ? fmt::format(", {:.0f} % of the gain", pct->second) : "");
  }
  return out.empty() ? "—" : out;
}

std::string roof_text(const RoofUse& r) {
  return fmt::format("{} {} ({}: {})", human_rate(r.rate, r.unit), r.name, r.origin, r.source);
}

void gaps_section(std::string& out, const RunReport& r) {
  if (r.gaps.empty()) return;
  out += "\n## What the records do not say\n\n";
  for (const auto& g : r.gaps) out += "- " + g + "\n";
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
    std::string hyp = !v.agent_hypothesis.empty() ? "(agent) " + v.agent_hypothesis
                      : view.hypothesis.empty()   ? v.hypothesis
                                                  : view.hypothesis;
    std::replace(hyp.begin(), hyp.end(), '\n', ' ');
    out += fmt::format(
        "| v{}{} | {} | {} | {} | {} | {} | {} | {} |\n", v.index, v.masked ? " (masked)" : "",
        v.outcome, time_or_dash(v.median_s), vs, pct ? fmt::format("{:.0f} %", *pct) : "—",
        v.bottleneck.empty() ? "—" : v.bottleneck, hyp.empty() ? "—" : hyp, methods_cell(v));
  }
  // Each branch's predictions against what the metrics did.
  std::string predictions;
  for (const auto& view : r.versions)
    for (const auto& p : view.record.predictions)
      predictions += fmt::format("- v{} {}: {}\n", view.record.index, p.branch, prediction_line(p));
  if (!predictions.empty()) out += "\n## Predictions against outcomes\n\n" + predictions;
  // What the honesty checks said of each version: compute-sanitizer on a would-be champion,
  // the distribution flags of its timing, and why it was turned down.
  std::string checks;
  for (const auto& view : r.versions) {
    const VersionRecord& v = view.record;
    if (v.sanitizer.empty() && v.flags.empty() && v.cross_check.empty()) continue;
    checks += fmt::format("- v{}:", v.index);
    if (!v.cross_check.empty()) checks += " The champion it started from: " + v.cross_check + ".";
    if (!v.sanitizer.empty()) checks += " compute-sanitizer " + v.sanitizer + ".";
    for (const auto& f : v.flags) checks += " Flagged: " + f + ".";
    if (v.outcome != VersionOutcome::accepted && !v.note.empty()) checks += " " + v.note;
    checks += "\n";
  }
  // KernelBench's review rule: the best version against the torch eager baseline.
  for (const auto& b : s.baselines)
    if (b.kernel == "torch eager" && r.best && b.status == VariantStatus::ok)
      if (auto note = review_speedup_over_eager(r.best->median_s, b.median_s))
        checks += fmt::format("- v{} is {}\n", r.best->index, *note);
  if (!checks.empty()) out += "\n## Honesty checks\n\n" + checks;
  // Methods by class, with the evidence behind each verdict.
  std::map<MethodOutcome, std::vector<std::string>> by_class;
  for (const auto& view : r.versions) {
    if (view.record.masked) continue;
    for (const auto& [m, cls] : view.record.method_outcomes) {
      std::string line = fmt::format("{} (v{}", m, view.record.index);
      if (auto a = view.record.attribution_ms.find(m); a != view.record.attribution_ms.end())
        line += fmt::format(", removing it costs {:+.3g} us", a->second * 1e3);
      if (auto v = view.sass.find(m); v != view.sass.end()) line += ", SASS " + v->second;
      by_class[cls].push_back(line + ")");
    }
  }
  out += "\n## Methods by class\n\n";
  if (by_class.empty()) out += "No method was applied (tuning only, or nothing triggered).\n";
  for (const auto& [cls, lines] : by_class)
    out += fmt::format("- **{}**: {}\n", cls, fmt::join(lines, "; "));
  out += "\n## What to try next\n\n";
  if (s.status == RunPhase::finished) out += "- The run stopped: " + s.stop_reason + ".\n";
  if (!s.git_error.empty())
    out += "- The run directory's git history is incomplete: " + s.git_error + ".\n";
  if (!r.versions.empty()) {
    const VersionRecord& last = r.versions.back().record;
    if (!last.bottleneck.empty())
      out += fmt::format("- The last profile found the champion {}: {}\n", last.bottleneck,
                         last.evidence.empty() ? "" : last.evidence.front());
  }
  if (r.best && r.roof)
    if (auto pct = r.pct_of_roof(*r.best); pct && *pct < 90)
      out += fmt::format(
          "- {:.0f} % of the {} roof is left: methods on that axis the problem cannot switch yet "
          "need "
          "toggles in kopt.toml, or a new kernel (`kopt iter branch`).\n",
          100 - *pct, r.bound);
  gaps_section(out, r);
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
