#pragma once
// `kopt optimize`: the loop, deterministic and resumable. Per iteration: profile the
// champion → roofline gaps → axis budget → methods (catalog triggers, within the budget,
// validated) → hypothesis.md → K branches (the methods on, tuning params varied) → measure
// all → the fastest correct branch becomes champion only if an interleaved comparison says
// it is faster than the current one → SASS check per method → leave-one-out ablation →
// attribution and classes (effective / ineffective / implementation-failed) → record and
// commit. Stops on the target, near_peak, the iteration limit, or no improvement for
// `patience` iterations. Every measurement is recorded by its content hash in run.json the
// moment it completes, so a run killed anywhere resumes without measuring anything twice.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "kopt/analysis/headroom.hpp"
#include "kopt/optimize/lab.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/store/run_state.hpp"
#include "kopt/tools/git.hpp"

namespace kopt::optimize {

struct OptimizeOptions {
  int iterations = 5;
  int branches = 4;
  int patience = 2;     // iterations without improvement before stopping
  int max_retries = 3;  // when every branch fails
  std::uint64_t seed = 1;
  std::string start_kernel;  // v0; default: the first kernel without method toggles, else the first
  std::filesystem::path run_dir;
  bool resume = false;
  // A restart of the run in run_dir (implies resume): from a recorded version (every accepted
  // version after it masked, so it is the champion again), or mask_half (the newer half of the
  // accepted versions masked: a loop stuck on one line goes back to where it branched). The
  // run is running again, with `iterations` more; the measurements stay and are not repeated.
  std::optional<int> from_version;
  enum class Restart { none, mask_half };
  Restart restart = Restart::none;
  // Every method outcome is written here, and its recommendations steer the choice:
  // ties go to past successes; methods that failed repeatedly on this family and chip are
  // left out, with the reason in the hypothesis. Null: no experience.
  ExperienceDb* experience = nullptr;
  // An external proposer (any agent CLI): run each iteration as `sh -c CMD` with the
  // iteration's analysis as JSON on stdin and these in the environment: KOPT_ANALYSIS (the
  // same JSON as a file), KOPT_PROPOSAL_DIR (where to write kernel files), KOPT_RUN_DIR,
  // KOPT_ITERATION, KOPT_PROBLEM_DIR. Every *.cu it writes there is a branch of the kernel
  // with method toggles (or the champion's), at the champion's point; an optional
  // branches.json — [{"file", "kernel", "set": {P: V}, "methods": [...], "ablates": M}] —
  // says more. No files, a timeout, or a failing command: the iteration is recorded as
  // failed and the run goes on.
  std::string proposer;
  double proposer_timeout_s = 600;
  // How the axis budget is drawn from the profile: the headroom to the roofline
  // (analysis/headroom.hpp) or KernelFlow's gaps, kept for comparison.
  BudgetFormula budget_formula = BudgetFormula::headroom;
  // Every branch of a round that measured is profiled, all in one ncu session (Lab::profile_all),
  // its files in the branch's folder; the next iteration's champion, one of them, is not
  // profiled again.
  bool profile_branches = true;
  // The first round that tunes a kernel (at the methods' settings) screens its space with
  // tune's screen-then-confirm evaluator (Lab::search_space): all of it when it has at most
  // this many points, else a neighbourhood of the champion with this many evaluations; its
  // champion is one of the round's branches. 0: never (branches only).
  std::size_t space_budget = 256;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// `git` may be null (no history commits); errors are for the whole run (bad input, a run
// directory that exists without --resume, a damaged run.json). Failed candidates are records.
Expected<RunState> run_optimize(const Problem& problem, const MethodCatalog& catalog,
                                const OptimizeOptions& options, Lab& lab, GitRepo* git);

// The same loop one step at a time, for an agent (same engine, same records):
//   iter_open     baseline if the run is new; profile, headroom, budget, a ranked list of
//                 suggestions or a reasoned stop (analysis/advice.hpp), hypothesis.md, an
//                 empty vN/branches/
//   iter_branch   adds a branch the agent wrote (a kernel source, a point, the methods it
//                 claims, or the method it leaves out for an ablation), with its author's
//                 hypothesis and predictions (--expect), recorded before anything is measured
//   iter_close    measures the branches, picks the champion, checks SASS, attributes every
//                 ablation, profiles the candidate and judges the predictions, records
//   iter_finalize ends the run
Expected<RunState> iter_open(const Problem& problem, const MethodCatalog& catalog,
                             const OptimizeOptions& options, Lab& lab, GitRepo* git);
Expected<RunState> iter_branch(const Problem& problem, const MethodCatalog& catalog,
                               const OptimizeOptions& options, Lab& lab, const BranchRecord& branch,
                               const std::filesystem::path& file);
Expected<RunState> iter_close(const Problem& problem, const MethodCatalog& catalog,
                              const OptimizeOptions& options, Lab& lab, GitRepo* git);
Expected<RunState> iter_finalize(const Problem& problem, const MethodCatalog& catalog,
                                 const OptimizeOptions& options, Lab& lab, GitRepo* git);

// The kernel that carries method toggles (the loop's branches are points of it).
const KernelSpec* method_kernel(const Problem& problem);

}  // namespace kopt::optimize
