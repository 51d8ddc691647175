#pragma once
// The state of one optimization run (run.json): one writer, replaced atomically, with a
// schema_version. Every completed evaluation is recorded by its content hash, so a run
// killed at any moment resumes without measuring anything twice; every version carries
// its evidence, hypothesis and outcome, and a `masked` flag that keeps a misleading record
// from steering decisions without deleting it.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/method_selection.hpp"
#include "kopt/analysis/prediction.hpp"
#include "kopt/core/error.hpp"
#include "kopt/measure/variant_status.hpp"
#include "kopt/problem/param_space.hpp"

namespace kopt {

inline constexpr int k_run_schema_version = 1;

// Whether a run goes on (kopt optimize --resume, the next iter open) or has stopped.
enum class RunPhase { running, finished };
// What became of an iteration's winner.
enum class VersionOutcome {
  baseline,  // v0: the starting kernel
  accepted,  // faster than the champion outside the noise, and passed the champion's checks
  rejected,  // not faster, flagged, or refused by a check
  failed,    // nothing of the iteration measured
};

template <>
struct EnumNames<RunPhase> {
  static constexpr std::array<std::pair<RunPhase, std::string_view>, 2> table{
      {{RunPhase::running, "running"}, {RunPhase::finished, "finished"}}};
};
template <>
struct EnumNames<VersionOutcome> {
  static constexpr std::array<std::pair<VersionOutcome, std::string_view>, 4> table{{
      {VersionOutcome::baseline, "baseline"},
      {VersionOutcome::accepted, "accepted"},
      {VersionOutcome::rejected, "rejected"},
      {VersionOutcome::failed, "failed"},
  }};
};

// One measured variant: build + check + time, keyed by the hash of what determines it.
struct EvaluationRecord {
  std::string key;  // content hash: source, params, arch, toolkit, dims, timing mode
  std::string kernel;
  ParamPoint point;
  VariantStatus status = VariantStatus::ok;
  double median_s = 0;
  double noise = 0;  // relative
  std::size_t samples = 0;
  std::string error;
  std::string recorded_at;
  std::string clocks;  // GPU clocks and throttle reasons after the measurement
  std::vector<std::string>
      flags;           // distribution flags of the samples: "bimodal (two clusters: ...)"
  std::string device;  // the worker that measured it, where a run has several (--gpus, --cluster)
};

// One record per iteration (v0 is the baseline, vN iteration N): what was tried, what it
// gave, and whether it became the champion.
struct VersionRecord {
  int index = 0;  // v0, v1, ...: the iteration
  int iteration = 0;
  std::string kernel;
  ParamPoint point;
  std::string
      source;  // the branch's own source (an agent's or a proposer's), absolute; "": the problem's
  std::string evaluation;  // key into RunState::evaluations
  double median_s = 0;
  double noise = 0;
  // The champion's median when the iteration began: what this version's gain is measured
  // from (0: not recorded, a run.json of an older kopt).
  double before_s = 0;
  std::string bottleneck;             // class at the time
  std::vector<std::string> evidence;  // the rule and metric values that led here
  std::string hypothesis;             // kopt's draft: the methods its analysis turns on
  std::string agent_hypothesis;  // the hypothesis of the branch that won, as its author wrote it
  std::vector<Prediction> predictions;  // every branch's, judged at close (analysis/prediction.hpp)
  std::vector<std::string> methods;     // the methods this version applied
  std::map<std::string, MethodOutcome> method_outcomes;
  std::map<std::string, double> attribution_ms;  // method -> time it saved (leave-one-out)
  // method -> its share of this iteration's log speedup: ln(time without it / time with it)
  // over ln(before_s / median_s), in %. Leave-one-out effects need not add up to the whole: a
  // share above 100 says the method saved more than the iteration gained (its other changes
  // cost time back), a negative one that the version was faster without it. Only where the
  // version was faster than the champion.
  std::map<std::string, double> attribution_pct;
  VersionOutcome outcome = VersionOutcome::accepted;
  std::string verdict;  // the interleaved comparison with the champion: faster, same, ...
  double ratio = 0;     // winner / champion time
  std::string note;     // why rejected or failed
  std::vector<std::string>
      flags;  // the distribution flags of this version's timing (never accepted with any)
  // compute-sanitizer on a candidate about to become champion: "clean: memcheck, racecheck",
  // "findings: ..." (then rejected), "unverifiable: ..." (accepted, and said), or "" (not run).
  std::string sanitizer;
  // The champion's median against ncu's duration when the iteration profiled it: empty when
  // they agree (measure/review.hpp), else what differs.
  std::string cross_check;
  std::string git_commit;
  bool masked = false;
  std::string mask_reason;

  // The iteration's speedup, champion before over this version: before_s / median_s, or
  // 1 / ratio where before_s was not recorded; nullopt when neither is known.
  std::optional<double> gain() const;
  // A method's own factor, leave-one-out: the time without it over the time with it
  // (above 1: it saved time); nullopt when it was not ablated.
  std::optional<double> method_factor(const std::string& method) const;
  // That factor's share of gain() on a log scale, in % (see attribution_pct); nullopt when the
  // method was not ablated or the version gained nothing.
  std::optional<double> log_share_pct(const std::string& method) const;
};

// A branch an agent added to the open iteration (`kopt iter branch`).
struct BranchRecord {
  std::string id;  // "a1", "a2", ...
  std::string kernel;
  std::string source;  // the copy in the run directory (absolute path)
  ParamPoint point;
  std::vector<std::string> methods;  // what the agent says the branch applies
  std::string ablates;               // a method this branch leaves out (leave-one-out), or ""
  std::string hypothesis;            // what the author expects and why, recorded before measurement
  std::vector<Prediction> expect;    // what a metric will do (--expect METRIC:up|down[:AMOUNT])
};

// An iteration opened for an agent (`kopt iter open`) and not closed yet.
struct OpenIteration {
  int index = 0;
  VersionRecord draft;  // bottleneck, evidence, hypothesis and suggested methods so far
  std::string budget;   // "compute 1, memory 2, latency 0"
  std::vector<std::string> suggestions;  // "method: why"
  nlohmann::json advice;  // analysis/advice.hpp's record: headroom, budgets, ranked list or stop
  MetricValues metrics;   // the champion's profile (advice metrics): the "before" of predictions
  std::vector<BranchRecord> branches;
  // What did not pay in this situation before (the experience DB's pitfalls), one a line.
  std::vector<std::string> pitfalls;
};

struct RunState {
  int schema_version = k_run_schema_version;
  std::string problem;
  std::string problem_dir;
  std::string device;
  std::string created_at;
  // The dims the run measures at (after --dim): a resume at others is refused, since every
  // recorded time is of this shape. Empty in runs recorded before it was kept.
  std::map<std::string, std::int64_t> dims;
  RunPhase status = RunPhase::running;
  std::string stop_reason;
  // Why the run directory's git history stopped being written ("" while it is): the run goes
  // on without it, and says so.
  std::string git_error;
  int iteration = 0;       // the last one completed
  int no_improvement = 0;  // iterations in a row without a new champion
  std::vector<VersionRecord> versions;
  std::map<std::string, EvaluationRecord> evaluations;
  std::optional<OpenIteration> open;          // agent-driven mode
  std::optional<EvaluationRecord> reference;  // the reference implementation, timed once
  std::vector<EvaluationRecord>
      baselines;  // PyTorch eager and torch.compile (a ref.py), timed once
  // The kernels' spaces screened so far ("KERNEL" or "KERNEL P=V ..." with the params held):
  // a resumed run does not search one again.
  std::vector<std::string> searched_spaces;
  // Those of them screened exhaustively (every feasible point): no branch of the loop draws
  // from one again, its screen's champion stands for it.
  std::vector<std::string> exhausted_spaces;
  nlohmann::json target;  // kopt target --json at the start (null: unknown)

  const VersionRecord* champion() const;  // the newest unmasked baseline or accepted version
  // Outcomes of methods in unmasked versions, the newest winning.
  std::map<std::string, MethodOutcome> method_history() const;
  const EvaluationRecord* find_evaluation(const std::string& key) const;
};

nlohmann::json to_json(const RunState& s);
// A file from a newer kopt, or a damaged one, is bad input naming the file; nothing is
// changed on disk.
Expected<RunState> run_state_from_json(const std::string& text, const std::string& file);

std::filesystem::path run_state_path(const std::filesystem::path& run_dir);
Expected<RunState> load_run_state(const std::filesystem::path& run_dir);
Expected<void> save_run_state(const std::filesystem::path& run_dir, const RunState& s);

// Marks versions masked (or not); a version that does not exist is bad input.
Expected<void> set_masked(RunState& s, const std::vector<int>& versions, bool masked,
                          const std::string& reason);

}  // namespace kopt
