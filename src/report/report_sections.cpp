#include "report_sections.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "kopt/measure/review.hpp"
#include "kopt/report/explanation_markdown.hpp"

namespace kopt::report_detail {
namespace {

// A factor as people read it: "1.43×".
std::string factor(double f) {
  return fmt::format("{:.2f}×", f);
}

// One version's attribution: its gain, each ablated method's own factor and share, and what
// the shares leave over (or overshoot) said in words.
std::optional<ReportItem> attribution_item(const VersionRecord& v) {
  std::vector<std::string> parts;
  double sum = 0, product = 1;
  bool negative = false;
  auto gain = v.gain();
  bool shared = gain && *gain > 1;
  for (const auto& m : v.methods) {
    auto f = v.method_factor(m);
    if (!f) continue;
    product *= *f;
    std::string part = fmt::format("{} {}", m, factor(*f));
    if (auto share = v.log_share_pct(m); shared && share) {
      sum += *share;
      negative |= *share < 0;
      part += fmt::format(" (share {:.0f} %{})", *share,
                          *share < 0 ? ": faster without it, it cost time" : "");
    } else if (*f < 1) {
      part += " (faster without it: it cost time)";
    }
    parts.push_back(part);
  }
  if (parts.empty()) return std::nullopt;
  std::string text;
  if (shared) {
    double before = v.before_s > 0 ? v.before_s : v.median_s * *gain;
    text = fmt::format("{} faster than the champion before it ({} → {}). Each method alone: {}.",
                       factor(*gain), human_time(before), human_time(v.median_s),
                       fmt::join(parts, ", "));
    bool several = parts.size() > 1;
    double rest = *gain / product;  // what the shares leave to the iteration's other changes
    // "Together 58 %: the other ..." for several methods; "The other ..." for one, whose share
    // was just given.
    std::string lead = several ? fmt::format(" Together {:.0f} %: t", sum) : std::string(" T");
    if (sum > 100.5)
      text += fmt::format(
          "{}he {} more than the iteration gained: its other changes (params, the kernel) made "
          "the kernel {} slower, which {} back.",
          lead, several ? "methods save" : "method saves", factor(1 / rest),
          several ? "they won" : "it won");
    else if (sum < 99.5)
      text += fmt::format(
          "{}he other {} came from the iteration's other changes (params, the kernel){}.", lead,
          factor(rest), several ? " and from how the methods combine" : "");
    else if (several)
      text += fmt::format(" Together {:.0f} %.", sum);
    if (negative) text += " A negative share: the version was faster without that method.";
  } else {
    text = fmt::format(
        "not faster than the champion before it{}; each method alone: {}. No share of a gain "
        "that was not made.",
        v.ratio > 0 ? fmt::format(" (time ratio {:.3f})", v.ratio) : std::string(),
        fmt::join(parts, ", "));
  }
  return ReportItem{fmt::format("v{}", v.index), text};
}

ReportSection attribution_section(const RunReport& r) {
  ReportSection s{"Attribution",
                  "A method's factor is the version's time without it (leave-one-out) over its "
                  "time with it. Its share is that factor's part of the iteration's speedup on a "
                  "log scale, so the shares of one version add as their factors multiply. "
                  "Leave-one-out effects need not add up to 100 %: the rest is the iteration's "
                  "other changes and how the methods interact.",
                  {},
                  ""};
  for (const auto& view : r.versions)
    if (!view.record.masked)
      if (auto item = attribution_item(view.record)) s.items.push_back(*item);
  if (s.items.empty()) s.intro.clear();  // nothing ablated: the section is left out
  return s;
}

ReportSection predictions_section(const RunReport& r) {
  ReportSection s{"Predictions against outcomes", "", {}, ""};
  for (const auto& view : r.versions)
    for (const auto& p : view.record.predictions)
      s.items.push_back(
          {"", fmt::format("v{} {}: {}", view.record.index, p.branch, prediction_line(p))});
  return s;
}

// What the honesty checks said of each version: compute-sanitizer on a would-be champion,
// the distribution flags of its timing, and why it was turned down.
ReportSection honesty_section(const RunReport& r) {
  ReportSection s{"Honesty checks", "", {}, ""};
  for (const auto& view : r.versions) {
    const VersionRecord& v = view.record;
    if (v.sanitizer.empty() && v.flags.empty() && v.cross_check.empty()) continue;
    std::string line = fmt::format("v{}:", v.index);
    if (!v.cross_check.empty()) line += " The champion it started from: " + v.cross_check + ".";
    if (!v.sanitizer.empty()) line += " compute-sanitizer " + v.sanitizer + ".";
    for (const auto& f : v.flags) line += " Flagged: " + f + ".";
    if (v.outcome != VersionOutcome::accepted && !v.note.empty()) line += " " + v.note;
    s.items.push_back({"", line});
  }
  // KernelBench's review rule: the best version against the torch eager baseline.
  if (r.state)
    for (const auto& b : r.state->baselines)
      if (b.kernel == "torch eager" && r.best && b.status == VariantStatus::ok)
        if (auto note = review_speedup_over_eager(r.best->median_s, b.median_s))
          s.items.push_back({"", fmt::format("v{} is {}", r.best->index, *note)});
  return s;
}

// Methods by class, with the evidence behind each verdict.
ReportSection methods_section(const RunReport& r) {
  ReportSection s{
      "Methods by class", "", {}, "No method was applied (tuning only, or nothing triggered)."};
  std::map<MethodOutcome, std::vector<std::string>> by_class;
  for (const auto& view : r.versions) {
    if (view.record.masked) continue;
    for (const auto& [m, cls] : view.record.method_outcomes) {
      std::string line = fmt::format("{} (v{}", m, view.record.index);
      if (auto a = view.record.attribution_ms.find(m); a != view.record.attribution_ms.end())
        line += ", removing it costs " + signed_time(a->second * 1e-3);
      if (auto v = view.sass.find(m); v != view.sass.end()) line += ", SASS " + v->second;
      by_class[cls].push_back(line + ")");
    }
  }
  for (const auto& [cls, lines] : by_class)
    s.items.push_back({std::string(name_of(cls)), fmt::format("{}", fmt::join(lines, "; "))});
  return s;
}

ReportSection next_section(const RunReport& r) {
  ReportSection s{"What to try next", "", {}, ""};
  if (!r.state) return s;
  const RunState& st = *r.state;
  if (st.status == RunPhase::finished)
    s.items.push_back({"", "The run stopped: " + st.stop_reason + "."});
  if (!st.git_error.empty())
    s.items.push_back({"", "The run directory's git history is incomplete: " + st.git_error + "."});
  if (!r.versions.empty()) {
    const VersionRecord& last = r.versions.back().record;
    std::string why = last.evidence.empty() ? "" : last.evidence.front();
    if (last.bottleneck == "unknown")
      s.items.push_back({"", "The last profile could not classify the champion: " + why});
    else if (!last.bottleneck.empty())
      s.items.push_back(
          {"", fmt::format("The last profile found the champion {}: {}", last.bottleneck, why)});
  }
  if (r.best && r.roof)
    if (auto pct = r.pct_of_roof(*r.best); pct && *pct < 90)
      s.items.push_back(
          {"", fmt::format("{:.0f} % of the {} roof is left: methods on that axis the problem "
                           "cannot switch yet need toggles in kopt.toml, or a new kernel (`kopt "
                           "iter branch`).",
                           100 - *pct, r.bound)});
  return s;
}

}  // namespace

std::string signed_time(double s) {
  return (s < 0 ? "-" : "+") + human_time(std::fabs(s));
}

std::vector<std::string> method_notes(const VersionRecord& v) {
  std::vector<std::string> out;
  for (const auto& m : v.methods) {
    std::string note = m;
    if (auto o = v.method_outcomes.find(m); o != v.method_outcomes.end())
      note += " — " + std::string(name_of(o->second));
    auto ms = v.attribution_ms.find(m);
    if (auto f = v.method_factor(m); ms != v.attribution_ms.end() && f)
      note += fmt::format(" ({}, {} alone)", signed_time(ms->second * 1e-3), factor(*f));
    out.push_back(note);
  }
  return out;
}

std::string hypothesis_text(const VersionView& view) {
  const VersionRecord& v = view.record;
  return !v.agent_hypothesis.empty() ? "(agent) " + v.agent_hypothesis
         : view.hypothesis.empty()   ? v.hypothesis
                                     : view.hypothesis;
}

std::vector<ReportSection> gaps_sections(const RunReport& r) {
  ReportSection s{"What the records do not say", "", {}, ""};
  for (const auto& g : r.gaps) s.items.push_back({"", g});
  return {s};
}

std::vector<ReportSection> closing_sections(const RunReport& r) {
  std::vector<ReportSection> out{attribution_section(r), predictions_section(r), honesty_section(r),
                                 methods_section(r), next_section(r)};
  for (auto& g : gaps_sections(r)) out.push_back(std::move(g));
  return out;
}

}  // namespace kopt::report_detail
