// report.html: one self-contained file (inline CSS and SVG, no scripts, no network) with a
// roofline, the time per version with its spread, the attribution per method, the tables, and
// every section report.md has after its table (report_sections.hpp), rendered from the same
// records.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "report_charts.hpp"
#include "report_sections.hpp"

namespace kopt {
using report_detail::attribution_svg;
using report_detail::closing_sections;
using report_detail::esc;
using report_detail::gaps_sections;
using report_detail::hypothesis_text;
using report_detail::method_notes;
using report_detail::ReportSection;
using report_detail::roofline_svg;
using report_detail::timeline_svg;
namespace {

const char* k_style = R"CSS(
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #1d2430; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
.headline { font-size: 1.15em; background: #f2f5fa; padding: .8em 1em; border-radius: 6px; }
table { border-collapse: collapse; margin: .5em 0; font-size: 13px; }
th, td { border-bottom: 1px solid #dde3ec; padding: .35em .6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
svg { background: #fff; border: 1px solid #dde3ec; border-radius: 6px; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2430; }
.note { color: #5b6677; }
)CSS";

// `code` spans of a section's text as <code>, the rest escaped.
std::string inline_html(const std::string& text) {
  std::string out;
  bool code = false;
  std::size_t at = 0;
  while (true) {
    std::size_t tick = text.find('`', at);
    if (tick == std::string::npos || (!code && text.find('`', tick + 1) == std::string::npos)) {
      out += esc(text.substr(at));
      return out;
    }
    out += code ? "<code>" + esc(text.substr(at, tick - at)) + "</code>"
                : esc(text.substr(at, tick - at));
    code = !code;
    at = tick + 1;
  }
}

// The sections report.md has (report_sections.hpp), as HTML.
std::string render(const std::vector<ReportSection>& sections) {
  std::string out;
  for (const auto& s : sections) {
    if (s.items.empty() && s.empty.empty()) continue;
    out += "<h2>" + esc(s.title) + "</h2>\n";
    if (!s.intro.empty()) out += "<p class=\"note\">" + inline_html(s.intro) + "</p>\n";
    if (s.items.empty()) {
      out += "<p>" + inline_html(s.empty) + "</p>\n";
      continue;
    }
    out += "<ul>\n";
    for (const auto& i : s.items)
      out += "<li>" + (i.label.empty() ? "" : "<b>" + esc(i.label) + "</b>: ") +
             inline_html(i.text) + "</li>\n";
    out += "</ul>\n";
  }
  return out;
}

}  // namespace

std::string report_html(const RunReport& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                    esc(r.title()) + " — kopt report</title><style>" + k_style +
                    "</style></head><body>\n";
  out += "<h1>" + esc(r.title()) + ": optimization report</h1>\n";
  if (r.state) {
    const RunState& s = *r.state;
    out += fmt::format(
        "<p class=\"note\">{} · started {} · {} iterations · {}</p>\n", esc(s.device),
        esc(s.created_at), s.iteration,
        esc(s.status == RunPhase::finished ? "stopped: " + s.stop_reason : "still running"));
    out += "<p class=\"headline\">";
    if (r.baseline && r.best && r.best != r.baseline) {
      out += fmt::format("<b>{} → {}</b>, <b>{:.2f}× faster</b>",
                         esc(human_time(r.baseline->median_s)), esc(human_time(r.best->median_s)),
                         *r.speedup());
      if (auto pct = r.pct_of_roof(*r.best); pct && r.roof)
        out += fmt::format(", {:.0f} % of the {} ceiling ({} {}, {})", *pct, esc(r.bound),
                           esc(human_rate(r.roof->rate, r.roof->unit)), esc(r.roof->name),
                           esc(r.roof->origin));
    } else {
      out += "No version beat the baseline.";
    }
    out += "</p>\n";
  }
  out += "<h2>Roofline</h2>\n" + roofline_svg(r) + "\n<h2>Time per version</h2>\n" +
         timeline_svg(r) + "\n<h2>Attribution per method</h2>\n" + attribution_svg(r) + "\n";
  out +=
      "<h2>Versions</h2>\n<table><tr><th>v</th><th>outcome</th><th>time</th><th>vs v0</th><th>% of "
      "roof</th>"
      "<th>bottleneck at the start</th><th>hypothesis</th><th>methods</th></tr>\n";
  for (const auto& view : r.versions) {
    const VersionRecord& v = view.record;
    auto pct = r.pct_of_roof(v);
    std::string methods;
    for (const auto& note : method_notes(v)) methods += (methods.empty() ? "" : "<br>") + esc(note);
    std::string hyp = hypothesis_text(view);
    out += fmt::format(
        "<tr><td>v{}{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
        v.index, v.masked ? " (masked)" : "", esc(std::string(name_of(v.outcome))),
        v.median_s > 0 ? esc(human_time(v.median_s)) : "—",
        r.baseline && v.median_s > 0 ? fmt::format("{:.2f}×", r.baseline->median_s / v.median_s)
                                     : "—",
        pct ? fmt::format("{:.0f} %", *pct) : "—", esc(v.bottleneck.empty() ? "—" : v.bottleneck),
        hyp.empty() ? "—" : esc(hyp), methods.empty() ? "—" : methods);
  }
  out += "</table>\n";
  out += render(r.state ? closing_sections(r) : gaps_sections(r));
  return out + "</body></html>\n";
}

std::string leaderboard_html(const std::vector<RunReport>& runs) {
  std::string md = leaderboard_markdown(runs);
  std::string out = std::string(
                        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
                        "charset=\"utf-8\"><title>kopt leaderboard</title><style>") +
                    k_style + "</style></head><body>\n<h1>Leaderboard</h1>\n<table>\n";
  // The markdown table's rows, as HTML.
  std::size_t start = md.find("| # |");
  bool header = true;
  while (start != std::string::npos && start < md.size()) {
    std::size_t end = md.find('\n', start);
    std::string line = md.substr(start, end - start);
    start = end == std::string::npos ? end : end + 1;
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    out += "<tr>";
    std::size_t p = 1;
    while (p < line.size()) {
      std::size_t q = line.find('|', p);
      if (q == std::string::npos) break;
      std::string cell = line.substr(p, q - p);
      while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      out += (header ? "<th>" : "<td>") + esc(cell) + (header ? "</th>" : "</td>");
      p = q + 1;
    }
    out += "</tr>\n";
    header = false;
  }
  return out + "</table>\n</body></html>\n";
}

}  // namespace kopt
