#pragma once
// What report.md and report.html both say, made once as plain records: each writer only
// renders them (markdown or HTML), so the two cannot say different things.
#include <string>
#include <vector>

#include "kopt/report/run_report.hpp"

namespace kopt::report_detail {

struct ReportItem {
  std::string label;  // a bold lead-in ("effective"), or empty
  std::string text;   // may hold `code` spans
};

struct ReportSection {
  std::string title;
  std::string intro;  // a paragraph before the items, or empty
  std::vector<ReportItem> items;
  std::string empty;  // said when there are no items; a section with neither is left out
};

// A time saved (+) or lost (-): "+15 us", "-700 ns" as human_time says it.
std::string signed_time(double s);

// One note per method a version applied: "m — effective (+15 us, 1.43× alone)".
std::vector<std::string> method_notes(const VersionRecord& v);
// The version's hypothesis: the winning branch's author's, else kopt's.
std::string hypothesis_text(const VersionView& view);

// The sections after the versions table, in order: attribution, predictions against
// outcomes, honesty checks, methods by class, what to try next, what the records do not say.
std::vector<ReportSection> closing_sections(const RunReport& r);
// Only the last of those (a report of a run.json that cannot be read has nothing else).
std::vector<ReportSection> gaps_sections(const RunReport& r);

}  // namespace kopt::report_detail
