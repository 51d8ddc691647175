#include "report_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "kopt/report/explanation_markdown.hpp"
#include "report_sections.hpp"

namespace kopt::report_detail {
namespace {

// Log-scale axis: value -> pixel.
struct LogAxis {
  double lo, hi, p0, p1;
  double operator()(double v) const {
    return p0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0);
  }
};

// Ticks at 1, 2 and 5 times the powers of ten when the axis spans less than three decades;
// none for a range a log axis cannot have (a bound at or below zero, or not a number).
std::vector<double> tick_values(double lo, double hi) {
  if (!(lo > 0 && hi >= lo && std::isfinite(hi))) return {};
  bool fine = std::log10(hi / lo) < 3;
  std::vector<double> out;
  for (int e = static_cast<int>(std::floor(std::log10(lo)));
       e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1})
      if (double v = m * std::pow(10.0, e); v >= lo && v <= hi) out.push_back(v);
  return out;
}

std::string tick_label(double v, const std::string& unit) {
  return unit == "s" ? human_time(v) : human_rate(v, unit);
}

// The widest tick label of an axis over [lo, hi].
double widest_tick(double lo, double hi, const std::string& unit) {
  double w = 0;
  for (double v : tick_values(lo, hi)) w = std::max(w, label_width(tick_label(v, unit)));
  return w;
}

// A horizontal axis's ticks: grid lines from `top` down to `bottom`, labels below it.
std::string x_ticks(const LogAxis& a, double top, double bottom, const std::string& unit) {
  std::string out;
  for (double v : tick_values(a.lo, a.hi))
    out += fmt::format(
        R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#eef1f5"/><text x="{0:.1f}" y="{3:.1f}" text-anchor="middle">{4}</text>)",
        a(v), top, bottom, bottom + 14, esc(tick_label(v, unit)));
  return out;
}

// A vertical axis's ticks: grid lines from `left` to `right`, labels left of it.
std::string y_ticks(const LogAxis& a, double left, double right, const std::string& unit) {
  std::string out;
  for (double v : tick_values(a.lo, a.hi))
    out += fmt::format(
        R"(<line x1="{1:.1f}" y1="{0:.1f}" x2="{2:.1f}" y2="{0:.1f}" stroke="#eef1f5"/><text x="{3:.1f}" y="{0:.1f}" text-anchor="end" dy="4">{4}</text>)",
        a(v), left, right, left - 4, esc(tick_label(v, unit)));
  return out;
}

// The left edge of a plot whose vertical axis has these labels: room for the widest.
double plot_left(double widest_label) {
  return std::max(70.0, std::ceil(widest_label) + 12);
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

}  // namespace

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

double label_width(const std::string& text) {
  std::size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8: count code points
  return 6.5 * static_cast<double>(chars);
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
  double lowest = c;
  for (const auto& v : r.versions)
    if (v.record.median_s > 0) lowest = std::min(lowest, *r.flops / v.record.median_s);
  double x_lo = std::min(intensity, ridge) / 8, x_hi = std::max(intensity, ridge) * 8;
  double y_lo = lowest / 4, y_hi = c * 3;
  // Margins from the labels: the rate labels left of the plot, half the last intensity label
  // right of it.
  double left = plot_left(widest_tick(y_lo, y_hi, "FLOP/s"));
  double right = w - std::max(20.0, widest_tick(x_lo, x_hi, "FLOP/B") / 2 + 4);
  LogAxis x{x_lo, x_hi, left, right};
  LogAxis y{y_lo, y_hi, h - 40.0, 20};
  std::string out = head + x_ticks(x, 20, h - 40.0, "FLOP/B") + y_ticks(y, left, right, "FLOP/s");
  // The roofs: bandwidth up to the ridge, compute after it.
  out += fmt::format(
      R"(<polyline fill="none" stroke="#0b5cad" stroke-width="2" points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}"><title>{}</title></polyline>)",
      x(x.lo), y(b * x.lo), x(ridge), y(c), x(x.hi), y(c),
      esc(fmt::format("memory roof {} ({}), compute roof {} ({})", human_rate(b, "B/s"),
                      r.memory_roof->origin, human_rate(c, "FLOP/s"), r.compute_roof->origin)));
  std::string ridge_label = fmt::format("ridge {:.3g} FLOP/B", ridge);
  bool ridge_fits_right = x(ridge) + 4 + label_width(ridge_label) <= w - 4;
  out += fmt::format(
      R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#8c959f" stroke-dasharray="4 3"/><text x="{0:.1f}" y="{3:.1f}" dx="{4}" text-anchor="{5}">{6}</text>)",
      x(ridge), y(c), h - 40.0, y(c) + 14, ridge_fits_right ? 4 : -4,
      ridge_fits_right ? "start" : "end", esc(ridge_label));
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
      R"(<text x="{:.1f}" y="{}" text-anchor="middle">arithmetic intensity (cost formulas)</text>)",
      (left + right) / 2, h - 6);
  return out + "</svg>";
}

std::string timeline_svg(const RunReport& r) {
  const int w = 700, h = 300;
  std::vector<const VersionRecord*> vs;
  double lo = 1e300, hi = 0;
  for (const auto& view : r.versions)
    if (view.record.median_s > 0) {
      vs.push_back(&view.record);
      // Noise of 100 % or more (a loaded machine) reaches below zero: the log axis stops at a
      // tenth of the median, where the error bar is cut.
      lo = std::min(lo, view.record.median_s * std::max(0.1, 1 - view.record.noise));
      hi = std::max(hi, view.record.median_s * (1 + view.record.noise));
    }
  std::string out = fmt::format(
      R"(<svg id="timeline" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="time per version">)",
      w, h, w, h);
  if (vs.empty()) return out + R"(<text x="20" y="40">No version has a time.</text></svg>)";
  double left = plot_left(widest_tick(lo / 1.5, hi * 1.5, "s")), right = w - 20.0;
  LogAxis y{lo / 1.5, hi * 1.5, h - 40.0, 20};
  out += y_ticks(y, left, right, "s");
  double step = (right - left - 20) / static_cast<double>(vs.size());
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const VersionRecord& v = *vs[i];
    double px = left + 20 + step * (static_cast<double>(i) + 0.5);
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
             R"(<text x="{:.1f}" y="{}" text-anchor="middle">version (bars: median ± noise)</text></svg>)",
             (left + right) / 2, h - 6);
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
      auto f = view.record.method_factor(m);
      bars.push_back(
          {fmt::format("v{} {} ({}{})", view.record.index, m, signed_time(ms * 1e-3),
                       f ? fmt::format(", {:.2f}× alone", *f) : std::string()),
           cls == view.record.method_outcomes.end() ? std::nullopt : std::optional(cls->second),
           ms * 1e3});
    }
  const int h = 40 + 26 * static_cast<int>(std::max<std::size_t>(1, bars.size()));
  // A bar that saved time runs right of the zero line with its label left of it; one that
  // cost time runs left with its label right of it. The zero line and the width leave room
  // for the longest label on each side.
  double left_labels = 0, right_labels = 0, most_saved = 0, most_cost = 0;
  for (const auto& b : bars) {
    (b.us >= 0 ? left_labels : right_labels) =
        std::max(b.us >= 0 ? left_labels : right_labels, label_width(b.label));
    (b.us >= 0 ? most_saved : most_cost) =
        std::max(b.us >= 0 ? most_saved : most_cost, std::fabs(b.us));
  }
  double zero = std::max(330.0, std::ceil(left_labels) + 16);
  const int w = static_cast<int>(std::max(700.0, std::ceil(zero + 6 + right_labels + 10)));
  std::string out = fmt::format(
      R"(<svg id="attribution" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="attribution">)",
      w, h, w, h);
  if (bars.empty())
    return out + R"(<text x="20" y="30">No method was ablated in this run.</text></svg>)";
  double room_right = w - 10 - zero, room_left = zero - 10;
  double scale = std::min(most_saved > 0 ? room_right / most_saved : 1e300,
                          most_cost > 0 ? room_left / most_cost : 1e300);
  if (!(scale < 1e300)) scale = 1;
  out += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="10" y2="{1}" stroke="#8c959f"/>)", zero,
                     h - 20);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = 20 + 26.0 * static_cast<double>(i), len = b.us * scale;
    const char* color = b.cls == MethodOutcome::effective     ? "#1a7f37"
                        : b.cls == MethodOutcome::ineffective ? "#9a6700"
                                                              : "#cf222e";
    out += fmt::format(
        R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="16" fill="{}"><title>{}</title></rect><text x="{:.1f}" y="{:.1f}" text-anchor="{}">{}</text>)",
        len >= 0 ? zero : zero + len, y, std::fabs(len), color,
        esc(fmt::format("{}: {}; removing it costs that much", b.label,
                        b.cls ? name_of(*b.cls) : "unclassified")),
        len >= 0 ? zero - 6 : zero + 6, y + 12, len >= 0 ? "end" : "start", esc(b.label));
  }
  return out + "</svg>";
}

}  // namespace kopt::report_detail
