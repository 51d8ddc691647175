// `kopt report RUN [--html]` and `kopt report --leaderboard RUN...`: from the records alone.
#include <iostream>

#include "commands.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/report/run_report.hpp"

namespace kopt::cli {
namespace {

struct ReportCliOptions {
  std::vector<std::string> runs;
  bool html = false;
  bool leaderboard = false;
  std::string out;  // default: the run directory (the leaderboard: stdout only)
};

int run_report_command(const GlobalOptions& g, const ReportCliOptions& o) {
  if (o.runs.empty()) return report_error(g, "report", 2, "name a run directory");
  if (o.leaderboard) {
    std::vector<RunReport> runs;
    for (const auto& r : o.runs) runs.push_back(load_run_report(r));
    std::string md = leaderboard_markdown(runs);
    if (!o.out.empty()) {
      if (auto w = write_text_atomic(std::filesystem::path(o.out) / "leaderboard.md", md); !w)
        return report_error(g, "report", 2, w.error().to_string());
      if (o.html)
        if (auto w = write_text_atomic(std::filesystem::path(o.out) / "leaderboard.html",
                                       leaderboard_html(runs));
            !w)
          return report_error(g, "report", 2, w.error().to_string());
    }
    std::cout << md;
    return 0;
  }
  if (o.runs.size() > 1)
    return report_error(g, "report", 2, "one run at a time (or --leaderboard)");
  std::filesystem::path dir = o.runs[0];
  if (!std::filesystem::is_directory(dir))
    return report_error(g, "report", 2, dir.string() + ": not a directory");
  RunReport r = load_run_report(dir);
  std::filesystem::path out = o.out.empty() ? dir : std::filesystem::path(o.out);
  std::vector<std::pair<std::string, std::string>> files = {
      {"report.md", report_markdown(r)}, {"benchmark.md", benchmark_markdown(r)}};
  if (o.html) files.emplace_back("report.html", report_html(r));
  for (const auto& [name, text] : files)
    if (auto w = write_text_atomic(out / name, text); !w)
      return report_error(g, "report", 2, w.error().to_string());
  if (g.json) {
    nlohmann::json j{
        {"schema_version", 1}, {"command", "report"}, {"run", dir.string()}, {"gaps", r.gaps}};
    for (const auto& [name, text] : files) j["files"].push_back((out / name).string());
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << files[0].second << "\nwritten:";
    for (const auto& [name, text] : files) std::cout << " " << (out / name).string();
    std::cout << "\n";
  }
  return r.state ? 0 : 1;
}

}  // namespace

std::vector<Command> report_commands(const GlobalRef& g) {
  auto o = std::make_shared<ReportCliOptions>();
  Command c{.path = {"report"},
            .help = "report.md, benchmark.md and report.html from a run directory",
            .run = [g, o] { return run_report_command(*g, *o); },
            .storage = o};
  c.options = {
      {.names = "runs",
       .help = "run directory (several with --leaderboard)",
       .target = &o->runs,
       .required = true},
      {.names = "--html",
       .help = "also write report.html (self-contained, SVG charts)",
       .target = &o->html},
      {.names = "--leaderboard",
       .help = "rank several runs by speedup and % of the ceiling",
       .target = &o->leaderboard},
      {.names = "--out", .help = "where to write (default: the run directory)", .target = &o->out}};
  return {c};
}

}  // namespace kopt::cli
