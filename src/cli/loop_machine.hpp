#pragma once
// What `kopt optimize` and the `kopt iter` steps share: the machine the loop runs on (workers,
// the evaluator over them, the lab, ncu, git), the run's reports and its table.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/optimize/lab.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/store/run_state.hpp"
#include "kopt/tools/git.hpp"

namespace kopt::cli {

// What the loop needs: its workers (one, one per --gpus device, or one per device of a Ray
// cluster), the evaluator over them, ncu if installed, the lab and git.
struct LoopMachine {
  std::unique_ptr<evaluate::WorkerPool> pool;
  std::unique_ptr<evaluate::Evaluator> evaluator;
  std::unique_ptr<optimize::Lab> lab;
  GitRepo git;
  LoopMachine(std::unique_ptr<evaluate::WorkerPool> workers, const Problem& problem,
              const MethodCatalog& catalog, const ProblemSelection& sel, double max_time_s,
              const std::filesystem::path& run_dir, bool sanitize, bool allow_mixed,
              const std::function<void(const std::string&)>& log);
};

// The run's versions as a table, its champion and where its files are.
void print_run(const RunState& s, const std::filesystem::path& dir);
// report.md, benchmark.md and report.html beside run.json, from the records.
void write_run_reports(const std::filesystem::path& run_dir);
// The experience DB at `path` (default: the user's); a DB that cannot be opened is said on
// stderr and the run goes on without experience.
std::optional<ExperienceDb> open_experience(const std::string& path);
std::function<void(const std::string&)> stderr_log();

}  // namespace kopt::cli
