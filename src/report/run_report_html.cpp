// report.html: one self-contained file (inline CSS and SVG, no scripts, no network) with a
// roofline, the time per version with its spread, the attribution per method, and tables.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"

namespace kopt {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

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

// Log-scale axis: value -> pixel.
struct LogAxis {
  double lo, hi, p0, p1;
  double operator()(double v) const {
    return p0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0);
  }
};

// Ticks at 1, 2 and 5 times the powers of ten when the axis spans less than three decades.
std::string decade_ticks(const LogAxis& a, bool horizontal, double other, const std::string& unit) {
  std::string out;
  bool fine = std::log10(a.hi / a.lo) < 3;
  std::vector<double> ticks;
  for (int e = static_cast<int>(std::floor(std::log10(a.lo)));
       e <= static_cast<int>(std::ceil(std::log10(a.hi))); ++e)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1})
      ticks.push_back(m * std::pow(10.0, e));
  for (double v : ticks) {
    if (v < a.lo || v > a.hi) continue;
    double p = a(v);
    out +=
        horizontal
            ? fmt::format(
                  R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#eef1f5"/><text x="{0:.1f}" y="{3:.1f}" text-anchor="middle">{4}</text>)",
                  p, 20.0, other, other + 14, esc(human_rate(v, unit)))
            : fmt::format(
                  R"(<line x1="{1:.1f}" y1="{0:.1f}" x2="{2:.1f}" y2="{0:.1f}" stroke="#eef1f5"/><text x="{3:.1f}" y="{0:.1f}" text-anchor="end" dy="4">{4}</text>)",
                  p, other, 680.0, other - 4,
                  esc(unit == "s" ? human_time(v) : human_rate(v, unit)));
  }
  return out;
}

const char* outcome_color(VersionOutcome o) {
  switch (o) {
    case VersionOutcome::accepted:
      return "#1a7f37";
    case VersionOutcome::baseline:
      return "#0b5cad";
    case VersionOutcome::rejected:
      return "#9a6700";
    case VersionOutcome::failed:
      break;
  }
  return "#cf222e";
}

std::string roofline_svg(const RunReport& r) {
  const int w = 700, h = 360;
  std::string head = fmt::format(
      R"(<svg id="roofline" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="roofline">)",
      w, h, w, h);
  if (!r.flops || *r.flops <= 0 || !r.bytes || *r.bytes <= 0 || !r.compute_roof || !r.memory_roof)
    return head +
           R"(<text x="20" y="40">No roofline: the records hold no FLOPs (cost formula) or no roofs for this run.</text>)" +
           (r.bytes && r.memory_roof && r.best
                ? fmt::format(
                      R"(<text x="20" y="64">Memory only: the champion moves {} against a {} roof.</text>)",
                      esc(human_rate(*r.bytes / r.best->median_s, "B/s")),
                      esc(human_rate(r.memory_roof->rate, "B/s")))
                : std::string()) +
           "</svg>";
  double c = r.compute_roof->rate, b = r.memory_roof->rate, ridge = c / b;
  double intensity = *r.flops / *r.bytes;
  LogAxis x{std::min(intensity, ridge) / 8, std::max(intensity, ridge) * 8, 70, w - 20.0};
  double lowest = c;
  for (const auto& v : r.versions)
    if (v.record.median_s > 0) lowest = std::min(lowest, *r.flops / v.record.median_s);
  LogAxis y{lowest / 4, c * 3, h - 40.0, 20};
  std::string out =
      head + decade_ticks(x, true, h - 40.0, "FLOP/B") + decade_ticks(y, false, 70, "FLOP/s");
  // The roofs: bandwidth up to the ridge, compute after it.
  out += fmt::format(
      R"(<polyline fill="none" stroke="#0b5cad" stroke-width="2" points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}"><title>{}</title></polyline>)",
      x(x.lo), y(b * x.lo), x(ridge), y(c), x(x.hi), y(c),
      esc(fmt::format("memory roof {} ({}), compute roof {} ({})", human_rate(b, "B/s"),
                      r.memory_roof->origin, human_rate(c, "FLOP/s"), r.compute_roof->origin)));
  out += fmt::format(
      R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#8c959f" stroke-dasharray="4 3"/><text x="{0:.1f}" y="{3:.1f}" dx="4">ridge {4:.3g} FLOP/B</text>)",
      x(ridge), y(c), h - 40.0, y(c) + 14, ridge);
  int n = 0;
  for (const auto& view : r.versions) {
    const VersionRecord& v = view.record;
    if (v.median_s <= 0 || v.masked) continue;
    double rate = *r.flops / v.median_s;
    double px = x(intensity) + 16.0 * (n++ % 6);  // same intensity: spread the markers apart
    out += fmt::format(
        R"(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="{}"><title>{}</title></circle><text x="{:.1f}" y="{:.1f}" text-anchor="middle">v{}</text>)",
        px, y(rate), outcome_color(v.outcome),
        esc(fmt::format("v{} {} {}: {}, {} ({})", v.index, v.kernel, point_to_string(v.point),
                        human_time(v.median_s), human_rate(rate, "FLOP/s"), v.outcome)),
        px, y(rate) + (n % 2 ? -9.0 : 16.0), v.index);
  }
  out += fmt::format(
      R"(<text x="{}" y="{}" text-anchor="middle">arithmetic intensity (cost formulas)</text>)",
      w / 2, h - 6);
  return out + "</svg>";
}

std::string timeline_svg(const RunReport& r) {
  const int w = 700, h = 300;
  std::vector<const VersionRecord*> vs;
  double lo = 1e300, hi = 0;
  for (const auto& view : r.versions)
    if (view.record.median_s > 0) {
      vs.push_back(&view.record);
      lo = std::min(lo, view.record.median_s * (1 - view.record.noise));
      hi = std::max(hi, view.record.median_s * (1 + view.record.noise));
    }
  std::string out = fmt::format(
      R"(<svg id="timeline" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="time per version">)",
      w, h, w, h);
  if (vs.empty()) return out + R"(<text x="20" y="40">No version has a time.</text></svg>)";
  LogAxis y{lo / 1.5, hi * 1.5, h - 40.0, 20};
  out += decade_ticks(y, false, 70, "s");
  double step = (w - 110.0) / std::max<std::size_t>(1, vs.size());
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const VersionRecord& v = *vs[i];
    double px = 90 + step * (static_cast<double>(i) + 0.5);
    double spread = v.median_s * v.noise;
    out += fmt::format(
        R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="#57606a"/>)", px,
        y(v.median_s + spread), y(std::max(v.median_s - spread, y.lo)));
    out += fmt::format(
        R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"{}><title>{}</title></rect><text x="{:.1f}" y="{}" text-anchor="middle">v{}</text>)",
        px - 6, y(v.median_s) - 6, outcome_color(v.outcome),
        v.masked ? R"( fill-opacity="0.3")" : "",
        esc(fmt::format("v{} {}: median {} ± {:.2f} % ({})", v.index, v.kernel,
                        human_time(v.median_s), 100 * v.noise, v.outcome)),
        px, h - 22, v.index);
  }
  return out +
         fmt::format(
             R"(<text x="{}" y="{}" text-anchor="middle">version (bars: median ± noise)</text></svg>)",
             w / 2, h - 6);
}

std::string attribution_svg(const RunReport& r) {
  struct Bar {
    std::string label;
    std::optional<MethodOutcome> cls;
    double us;
  };
  std::vector<Bar> bars;
  for (const auto& view : r.versions)
    for (const auto& [m, ms] : view.record.attribution_ms) {
      auto cls = view.record.method_outcomes.find(m);
      bars.push_back(
          {fmt::format("v{} {}", view.record.index, m),
           cls == view.record.method_outcomes.end() ? std::nullopt : std::optional(cls->second),
           ms * 1e3});
    }
  int h = 40 + 26 * static_cast<int>(std::max<std::size_t>(1, bars.size()));
  std::string out = fmt::format(
      R"(<svg id="attribution" width="700" height="{}" viewBox="0 0 700 {}" role="img" aria-label="attribution">)",
      h, h);
  if (bars.empty())
    return out + R"(<text x="20" y="30">No method was ablated in this run.</text></svg>)";
  double most = 0;
  for (const auto& b : bars) most = std::max(most, std::fabs(b.us));
  double zero = 330, scale = 320 / std::max(most, 1e-9);
  out +=
      fmt::format(R"(<line x1="{0}" x2="{0}" y1="10" y2="{1}" stroke="#8c959f"/>)", zero, h - 20);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = 20 + 26.0 * static_cast<double>(i), len = b.us * scale;
    const char* color = b.cls == MethodOutcome::effective     ? "#1a7f37"
                        : b.cls == MethodOutcome::ineffective ? "#9a6700"
                                                              : "#cf222e";
    out += fmt::format(
        R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="16" fill="{}"><title>{}</title></rect><text x="{:.1f}" y="{:.1f}" text-anchor="{}">{}</text>)",
        len >= 0 ? zero : zero + len, y, std::fabs(len), color,
        esc(fmt::format("{}: removing it costs {:+.3g} us ({})", b.label, b.us,
                        b.cls ? name_of(*b.cls) : "unclassified")),
        len >= 0 ? zero - 6 : zero + 6, y + 12, len >= 0 ? "end" : "start",
        esc(fmt::format("{} ({:+.3g} us)", b.label, b.us)));
  }
  return out + "</svg>";
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
    for (const auto& m : v.methods) {
      auto o = v.method_outcomes.find(m);
      methods += (methods.empty() ? "" : "<br>") + esc(m) +
                 (o == v.method_outcomes.end() ? "" : " — " + esc(std::string(name_of(o->second))));
    }
    out += fmt::format(
        "<tr><td>v{}{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
        v.index, v.masked ? " (masked)" : "", esc(std::string(name_of(v.outcome))),
        v.median_s > 0 ? esc(human_time(v.median_s)) : "—",
        r.baseline && v.median_s > 0 ? fmt::format("{:.2f}×", r.baseline->median_s / v.median_s)
                                     : "—",
        pct ? fmt::format("{:.0f} %", *pct) : "—", esc(v.bottleneck.empty() ? "—" : v.bottleneck),
        esc(!v.agent_hypothesis.empty() ? "(agent) " + v.agent_hypothesis
            : view.hypothesis.empty()   ? v.hypothesis
                                        : view.hypothesis),
        methods.empty() ? "—" : methods);
  }
  out += "</table>\n";
  std::string predictions;
  for (const auto& view : r.versions)
    for (const auto& p : view.record.predictions)
      predictions +=
          "<li>" + esc(fmt::format("v{} {}: {}", view.record.index, p.branch, prediction_line(p))) +
          "</li>\n";
  if (!predictions.empty())
    out += "<h2>Predictions against outcomes</h2>\n<ul>\n" + predictions + "</ul>\n";
  if (!r.gaps.empty()) {
    out += "<h2>What the records do not say</h2>\n<ul>\n";
    for (const auto& g : r.gaps) out += "<li>" + esc(g) + "</li>\n";
    out += "</ul>\n";
  }
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
