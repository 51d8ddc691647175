#pragma once
// `kopt campaign SOURCE... --out DIR`: a suite of problems (folders of kopt.toml problems,
// KernelBench files or a KernelBench level) taken through a plan — import, check, bench against
// torch eager and torch.compile, tune where a kernel declares a space, optimize where asked —
// with a budget per problem, one problem per GPU at a time, resumable after a kill at any
// moment, and answered with one leaderboard (leaderboard.hpp).
//
// Each step is one of kopt's own commands run as a child process with --json: a step that
// crashes, hangs or exhausts memory is that step's outcome, never the campaign's end; a budget
// is a deadline the child is killed at; and what a step found is the command's own JSON document,
// kept as a record in the campaign directory, from which the leaderboard is made.
//
//   DIR/campaign.json              the state: sources, plan, budget, each problem's steps
//   DIR/sources.json               sources added while a campaign runs (read between problems)
//   DIR/problems/NAME/STEP.json    a step's JSON document; STEP.log its stderr
//   DIR/problems/NAME/problem/     a KernelBench file's imported problem
//   DIR/problems/NAME/run/         the optimize step's run directory (its --resume)
//   DIR/leaderboard.{md,html,json} (leaderboard.hpp)
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/enum_names.hpp"
#include "kopt/core/error.hpp"
#include "kopt/core/process.hpp"

namespace kopt::campaign {

// What a step runs: `kopt import kernelbench`, `check`, `bench --vs-torch`, `tune`, `optimize`.
enum class StepKind { import, check, bench, tune, optimize };
// What became of a step. `done`: the command ran to its end (its verdicts on candidates are in
// its document, whatever its exit code 0 or 1); `refused`: bad input (exit 2); `environment`: the
// machine failed it (exit 3 or 4, a signal, no start), never a verdict, and tried again — alone —
// before the campaign ends and on resume; `budget`: killed at the problem's deadline; `skipped`:
// nothing to do (the reason says why); `running`: started and not yet answered (a campaign killed
// then runs it again).
enum class StepStatus { pending, running, done, refused, environment, budget, skipped };

}  // namespace kopt::campaign

namespace kopt {
template <>
struct EnumNames<campaign::StepKind> {
  static constexpr std::array<std::pair<campaign::StepKind, std::string_view>, 5> table{{
      {campaign::StepKind::import, "import"},
      {campaign::StepKind::check, "check"},
      {campaign::StepKind::bench, "bench"},
      {campaign::StepKind::tune, "tune"},
      {campaign::StepKind::optimize, "optimize"},
  }};
};
template <>
struct EnumNames<campaign::StepStatus> {
  static constexpr std::array<std::pair<campaign::StepStatus, std::string_view>, 7> table{{
      {campaign::StepStatus::pending, "pending"},
      {campaign::StepStatus::running, "running"},
      {campaign::StepStatus::done, "done"},
      {campaign::StepStatus::refused, "refused"},
      {campaign::StepStatus::environment, "environment"},
      {campaign::StepStatus::budget, "budget"},
      {campaign::StepStatus::skipped, "skipped"},
  }};
};
}  // namespace kopt

namespace kopt::campaign {

struct StepRecord {
  StepKind kind = StepKind::check;
  std::string kernel;  // tune: the kernel whose space it searched
  StepStatus status = StepStatus::pending;
  int exit_code = -1;
  double wall_s = 0;
  std::string reason;  // why refused, environment, budget or skipped; the command's error
  int attempts = 0;    // runs begun (an environment failure is tried again)
  std::string device;  // the lane's device ordinal ("" for the default device)
  // The step's record under the problem's directory: "check.json", "tune-KERNEL.json"; and
  // its stderr beside it: "check.log".
  std::string record() const { return stem() + ".json"; }
  std::string log() const { return stem() + ".log"; }
  std::string stem() const;  // "check", "tune-KERNEL"
};

struct CampaignProblem {
  std::string name;  // unique in the campaign: the problem's directory or KernelBench file stem
  std::filesystem::path source;  // the kopt.toml problem directory or the KernelBench file
  std::filesystem::path dir;     // the problem directory the steps run on
  bool kernelbench = false;      // imported from a KernelBench file (`problem/` under its room)
  // A KernelBench answer, --candidates DIR/NAME.py defining ModelNew: the steps run its copy
  // (the room's candidate/NAME.py) as a kernel of the KernelBench file, `kopt check FILE --ref
  // SOURCE` (docs/bare-files.md), and kopt infers the problem beside the copy, in `dir`
  // (candidate/kopt-NAME).
  std::filesystem::path modelnew;
  // Of the files that decide it (kopt.toml and its sources; the KernelBench file): when they
  // change, every step is done again.
  std::string fingerprint;
  double spent_s = 0;  // its steps' wall time so far, against the budget
  std::vector<StepRecord> steps;
};

struct CampaignPlan {
  bool check = true, bench = true, tune = true, optimize = false;
};
Expected<CampaignPlan> parse_plan(const std::string& text);  // "check,bench,tune,optimize"
std::string plan_text(const CampaignPlan& p);

struct CampaignOptions {
  std::vector<std::filesystem::path> sources;
  std::filesystem::path out;
  // KernelBench: a folder whose NAME/kopt.toml replaces NAME.py, or whose NAME.py (a ModelNew
  // module) is the candidate of NAME.py.
  std::filesystem::path candidates;
  CampaignPlan plan;
  double budget_s = 600;  // per problem, every step together
  std::size_t evals = 0;  // tune: evaluations per kernel (0: its time budget alone)
  double max_time_s = 5;  // bench: each variant's time cap
  std::string gpus;       // --gpus: a lane (one problem at a time) per device
  std::string cluster;    // --cluster: tune and optimize spread over it, one lane
  std::string backend;    // passed to every step (--backend)
  unsigned jobs = 0;      // parallel KernelBench imports (0: min(4, cores))
  bool force = false;     // every step again
  std::filesystem::path kopt = self_executable();
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// A step's command, run to its end or to the deadline; tests pass fakes.
using StepRunner = std::function<CommandResult(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout)>;
StepRunner system_step_runner();

struct CampaignState {
  std::vector<std::string> sources;  // as given, absolute
  std::string candidates;
  CampaignPlan plan;
  double budget_s = 0;
  std::vector<CampaignProblem> problems;
  double wall_s = 0;              // this invocation's
  bool added_to_running = false;  // another campaign held the directory: sources added to it
  int exit_code() const;          // 0 every step ran or was skipped; 1 refused or environment
};

// The problems of the sources, in order (a folder's problems sorted, KernelBench's numerically).
// A folder holds problem directories (kopt.toml, at any depth) and KernelBench files (*.py with
// `class Model`); a source may also be one of them. Names are unique: bad input names both.
Expected<std::vector<CampaignProblem>> discover_problems(
    const std::vector<std::filesystem::path>& sources, const std::filesystem::path& out,
    const std::filesystem::path& candidates);

// The whole campaign: what the directory's state already holds is kept (a problem whose files
// changed starts again), sources named now are added, and every step not yet done runs.
// Bad input (a source that is not there, a plan that names no step) is an Error before anything
// runs; everything after that is a step's status.
Expected<CampaignState> run_campaign(const CampaignOptions& options, const StepRunner& run);

nlohmann::json to_json(const StepRecord& s);
nlohmann::json to_json(const CampaignProblem& p);
nlohmann::json to_json(const CampaignState& s);
Expected<CampaignState> load_campaign_state(const std::filesystem::path& out);

}  // namespace kopt::campaign
