// The leaderboard written out (leaderboard.hpp): markdown, self-contained HTML, JSON.
#include <fmt/format.h>

#include "kopt/campaign/leaderboard.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "table_cell.hpp"

namespace kopt::campaign {
using nlohmann::json;

namespace {

std::string time_text(const std::optional<double>& s) {
  return s ? human_time(*s) : "-";
}

std::string ratio_text(const std::optional<double>& x) {
  return x ? fmt::format("{:.2f}x", *x) : "-";
}

std::string pct_text(const std::optional<double>& x) {
  return x ? fmt::format("{:.1f} %", *x) : "-";
}

std::string cell(std::string s) {
  return table_cell(std::move(s), 240);
}

std::string joined(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// The row's cells, in the table's order; the last says why a number is missing.
std::vector<std::string> cells(const LeaderboardRow& r) {
  std::vector<std::string> why = r.causes;
  why.insert(why.end(), r.notes.begin(), r.notes.end());
  return {r.problem,
          r.shape.empty() ? "-" : r.shape,
          std::string(name_of(r.status)),
          r.best.empty() ? "-" : r.best + " (" + r.best_from + ")",
          time_text(r.time_s),
          time_text(r.eager_s),
          time_text(r.compile_s),
          ratio_text(r.speedup_eager),
          ratio_text(r.speedup_compile),
          pct_text(r.pct_sol),
          r.bound,
          r.stopped,
          joined(why, "; ")};
}

const std::vector<std::string> k_header = {"problem",
                                           "shape",
                                           "status",
                                           "best candidate (from)",
                                           "time",
                                           "torch eager",
                                           "torch.compile",
                                           "vs eager",
                                           "vs compile",
                                           "%SOL",
                                           "bound",
                                           "stopped by",
                                           "failed candidates, why a number is missing"};

std::string summary_line(const Leaderboard& b) {
  std::size_t correct = 0;
  for (const auto& r : b.rows) correct += r.correct();
  return fmt::format(
      "{} rows (problem x shape), {} with a candidate that passed; plan {}, budget {:.0f} s per "
      "problem. Geometric-mean speedup: {} over torch eager ({} rows), {} over torch.compile "
      "({} rows).",
      b.rows.size(), correct, b.plan, b.budget_s, ratio_text(b.geomean_eager), b.n_eager,
      ratio_text(b.geomean_compile), b.n_compile);
}

}  // namespace

std::string leaderboard_markdown(const Leaderboard& b) {
  std::string md = "# Campaign leaderboard\n\n" + summary_line(b) + "\n\n";
  md +=
      "fast_p (KernelBench's: the share of all rows whose candidate is correct and more than p "
      "times faster; p = 0 is the share correct):\n\n| p | over eager | over torch.compile |\n"
      "|---:|---:|---:|\n";
  for (const auto& f : b.fast_p)
    md += fmt::format("| {} | {:.2f} | {:.2f} |\n", f.p, f.over_eager, f.over_compile);
  md += "\n|";
  for (const auto& h : k_header) md += " " + h + " |";
  md += "\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|\n";
  for (const auto& r : b.rows) {
    md += "|";
    for (const auto& c : cells(r)) md += " " + cell(c) + " |";
    md += "\n";
  }
  if (!b.failures.empty()) {
    md += "\n## Failures by cause\n\n";
    for (const auto& [cause, where] : b.failures)
      md += fmt::format("- **{}** ({}): {}\n", cause, where.size(), cell(joined(where, ", ")));
  }
  return md;
}

std::string leaderboard_html(const Leaderboard& b) {
  auto esc = [](const std::string& s) {
    std::string out;
    for (char c : s)
      out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return out;
  };
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kopt campaign "
      "leaderboard</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
      "collapse}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}th{background:#eee}"
      ".faster{background:#e3f6e3}.slower{background:#fff6dd}.failed,.refused,.environment,"
      ".budget{background:#fbe3e3}</style></head><body>\n<h1>Campaign leaderboard</h1>\n<p>" +
      esc(summary_line(b)) +
      "</p>\n<table><tr><th>p</th><th>fast_p over eager</th><th>over "
      "torch.compile</th></tr>\n";
  for (const auto& f : b.fast_p)
    h += fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{:.2f}</td></tr>\n", f.p, f.over_eager,
                     f.over_compile);
  h += "</table>\n<h2>Rows</h2>\n<table><tr>";
  for (const auto& x : k_header) h += "<th>" + esc(x) + "</th>";
  h += "</tr>\n";
  for (const auto& r : b.rows) {
    h += "<tr class=\"" + std::string(name_of(r.status)) + "\">";
    for (const auto& c : cells(r)) h += "<td>" + esc(c) + "</td>";
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (!b.failures.empty()) {
    h += "<h2>Failures by cause</h2>\n<ul>\n";
    for (const auto& [cause, where] : b.failures)
      h += "<li><b>" + esc(cause) + "</b> (" + std::to_string(where.size()) +
           "): " + esc(joined(where, ", ")) + "</li>\n";
    h += "</ul>\n";
  }
  return h + "</body></html>\n";
}

json to_json(const Leaderboard& b) {
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  json rows = json::array();
  for (const auto& r : b.rows)
    rows.push_back({{"problem", r.problem},
                    {"shape", r.shape},
                    {"status", r.status},
                    {"best", r.best},
                    {"best_from", r.best_from},
                    {"time_s", opt(r.time_s)},
                    {"eager_s", opt(r.eager_s)},
                    {"compile_s", opt(r.compile_s)},
                    {"speedup_eager", opt(r.speedup_eager)},
                    {"speedup_compile", opt(r.speedup_compile)},
                    {"pct_sol", opt(r.pct_sol)},
                    {"bound", r.bound},
                    {"stopped", r.stopped},
                    {"causes", r.causes},
                    {"notes", r.notes}});
  json fast = json::array();
  for (const auto& f : b.fast_p)
    fast.push_back({{"p", f.p}, {"over_eager", f.over_eager}, {"over_compile", f.over_compile}});
  return {{"schema_version", 1},
          {"plan", b.plan},
          {"budget_s", b.budget_s},
          {"rows", rows},
          {"fast_p", fast},
          {"geomean_speedup_eager", opt(b.geomean_eager)},
          {"geomean_speedup_compile", opt(b.geomean_compile)},
          {"geomean_rows_eager", b.n_eager},
          {"geomean_rows_compile", b.n_compile},
          {"failures", b.failures}};
}

Expected<void> write_leaderboard_files(const Leaderboard& b, const std::filesystem::path& out) {
  if (auto w = write_text_atomic(out / "leaderboard.md", leaderboard_markdown(b)); !w) return w;
  if (auto w = write_text_atomic(out / "leaderboard.html", leaderboard_html(b)); !w) return w;
  return write_text_atomic(out / "leaderboard.json", to_json(b).dump(1) + "\n");
}

}  // namespace kopt::campaign
