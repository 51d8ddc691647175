// `kopt optimize PROBLEM` (the whole loop) and `kopt iter mask|unmask RUN`.
#include "loop_machine.hpp"

#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/parallel.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/dispatcher.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/optimize/gpu_lab.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/report/run_report.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/tools/tool_probe.hpp"

namespace kopt::cli {
using optimize::GpuLabOptions;
using optimize::make_gpu_lab;

LoopMachine::LoopMachine(std::unique_ptr<evaluate::WorkerPool> workers, const Problem& problem,
                         const MethodCatalog& catalog, const ProblemSelection& sel,
                         double max_time_s, const std::filesystem::path& run_dir, bool sanitize,
                         bool allow_mixed, const std::function<void(const std::string&)>& log)
    : pool(std::move(workers)), git(pool->runner(), run_dir) {
  evaluate::EvaluatorOptions eo;
  eo.arch = sel.arch;
  eo.cache_root = cache_dir();
  eo.allow_mixed = allow_mixed;
  eo.jobs = hardware_jobs();  // a space search builds its batches on every core
  if (log) eo.log = log;      // a worker lost on the way is said there
  evaluator = std::make_unique<evaluate::Evaluator>(problem, pool->contexts(), eo);
  GpuLabOptions lo;
  lo.rigour = evaluate::Rigour::decide(max_time_s);
  lo.device = sel.device;
  lo.kopt_executable = self_executable();
  ToolInfo ncu = probe_tool(pool->runner(), "ncu");
  if (ncu.found) {
    lo.ncu = ncu.path;
    lo.ncu_version = ncu.version;
  }
  if (sanitize)
    lo.sanitize = evaluate::sanitize_request(pool->runner(), {"memcheck", "racecheck"}, sel.device);
  lab = make_gpu_lab(*evaluator, catalog, lo);
}

void print_run(const RunState& s, const std::filesystem::path& dir) {
  std::cout << fmt::format(
      "kopt optimize {} · {} · {} iterations · {}\n\n", s.problem, s.device, s.iteration,
      s.stop_reason.empty() ? std::string(name_of(s.status)) : "stopped: " + s.stop_reason);
  double base = s.versions.empty() ? 0 : s.versions[0].median_s;
  std::cout << fmt::format("{:<4} {:<9} {:>10} {:>8}  {:<40} {}\n", "", "outcome", "time",
                           "speedup", "variant", "methods");
  for (const auto& v : s.versions) {
    std::string methods;
    for (const auto& m : v.methods) {
      auto o = v.method_outcomes.find(m);
      methods += (methods.empty() ? "" : ", ") + m +
                 (o == v.method_outcomes.end() ? "" : fmt::format(" ({})", o->second));
    }
    std::cout << fmt::format(
        "v{:<3} {:<9} {:>10} {:>8}  {:<40} {}{}\n", v.index,
        fmt::format("{}{}", v.outcome, v.masked ? "*" : ""),
        v.median_s > 0 ? human_time(v.median_s) : "-",
        v.median_s > 0 && base > 0 ? fmt::format("{:.2f}x", base / v.median_s) : "-",
        v.kernel + (v.point.empty() ? "" : " " + point_to_string(v.point)), methods,
        v.note.empty() ? "" : "  [" + v.note + "]");
  }
  if (!s.versions.empty() && !s.versions.back().predictions.empty()) {
    std::cout << fmt::format("\npredictions of v{}:\n", s.versions.back().index);
    for (const auto& p : s.versions.back().predictions)
      std::cout << "  " << p.branch << " " << prediction_line(p) << "\n";
  }
  if (const VersionRecord* c = s.champion())
    std::cout << fmt::format("\nchampion: v{} {} at {}\n", c->index, c->kernel,
                             human_time(c->median_s));
  std::cout << "run directory: " << dir.string()
            << " (run.json, v*/hypothesis.md, profiles, branches, ablations)\n";
}

void write_run_reports(const std::filesystem::path& run_dir) {
  RunReport r = load_run_report(run_dir);
  (void)write_text_atomic(run_dir / "report.md", report_markdown(r));
  (void)write_text_atomic(run_dir / "benchmark.md", benchmark_markdown(r));
  (void)write_text_atomic(run_dir / "report.html", report_html(r));
}

std::optional<ExperienceDb> open_experience(const std::string& path) {
  auto db =
      ExperienceDb::open(path.empty() ? default_experience_db() : std::filesystem::path(path));
  if (db) return std::move(*db);
  std::cerr << "kopt: running without experience: " << db.error().to_string() << "\n";
  return std::nullopt;
}

std::function<void(const std::string&)> stderr_log() {
  return [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };
}

}  // namespace kopt::cli
