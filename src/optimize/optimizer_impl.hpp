#pragma once
// The optimization loop's engine (engine/optimizer.hpp), for its own source files only:
//   optimizer.cpp         the run directory, measurements, the baseline, the automatic iteration
//   optimizer_advice.cpp  the open's selection context, advice and hypothesis.md
//   optimizer_agent.cpp   the agent's steps (iter open|branch|close|finalize), the proposer hook,
//                         branches measured and their predictions judged
//   optimizer_decide.cpp  the champion decision, SASS checks, attribution, experience, records
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "kopt/analysis/advice.hpp"
#include "kopt/analysis/method_selection.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/evaluate/sanitize.hpp"
#include "kopt/measure/review.hpp"
#include "kopt/optimize/iteration_notes.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/tune/search_space.hpp"

namespace kopt::optimize::optimizer_detail {
namespace fs = std::filesystem;
// The branch name of kopt's own predictions in the records and the predictions table.
inline constexpr const char* k_loop_branch = "loop";
using nlohmann::json;

// The point has every assignment (a method toggle is on at it).
inline bool applies(const ParamPoint& p, const std::map<std::string, std::int64_t>& assignments) {
  for (const auto& [k, v] : assignments)
    if (auto it = p.find(k); it == p.end() || it->second != v) return false;
  return true;
}

inline ParamPoint with(ParamPoint p, const std::map<std::string, std::int64_t>& assignments) {
  for (const auto& [k, v] : assignments) p[k] = v;
  return p;
}

class Optimizer {
 public:
  Optimizer(const Problem& p, const MethodCatalog& c, const OptimizeOptions& o, Lab& lab,
            GitRepo* git)
      : m_p(p), m_catalog(c), m_o(o), m_lab(lab), m_git(git), m_mk(method_kernel(p)) {}

  Expected<RunState> run();

 private:
  // --- the run directory -------------------------------------------------------------------
  Expected<void> open();
  // --from vK or --restart mask-half on a loaded run: the versions masked, the run running.
  Expected<void> restart();

  Expected<void> save();

  void commit(const std::string& message, VersionRecord* record);

  void finish(const std::string& reason);

  fs::path version_dir(int i) const;

  // --- measurements, each recorded the moment it completes ---------------------------------
  static EvaluationRecord record(const std::string& key, const std::string& kernel,
                                 const ParamPoint& point, const Measured& m);

  std::pair<std::string, Measured> measure(const Variant& v);
  std::vector<std::pair<std::string, Measured>> measure_all(const std::vector<Variant>& vs);

  void write_variant_files(const fs::path& dir, const Variant& v, const Measured& m);

  Expected<void> baseline();

  // --- one iteration -------------------------------------------------------------------------
  struct Opened {
    Variant champ;
    double champ_time = 0;
    VersionRecord rec;  // bottleneck, evidence, hypothesis, methods
  };

  // The champion as the iteration starts from it; bad input when every version is masked.
  Expected<Opened> from_champion() const;

  // Profile, budget, methods, hypothesis. nullopt when the run stopped instead (target,
  // near peak, no profile).
  Expected<std::optional<Opened>> begin_iteration(int i);

  Expected<void> iterate(int i);

  // Whether the loop should screen `kernel`'s whole space before it trusts a stop: the kernel
  // declares a space of more than one point, the run may screen spaces, and it has not screened
  // all of it (a round with methods screens it with the method params held).
  bool space_unscreened(const std::string& kernel) const;
  // The kernel whose space a round tunes from `champ`: the method kernel where there is one.
  std::string tuned_kernel(const Variant& champ) const { return m_mk ? m_mk->name : champ.kernel; }

  // The name of `k`'s space with the params of `held` held there: "KERNEL" or "KERNEL P=V ...".
  static std::string space_key(const KernelSpec& k, const ParamPoint& held);

  // Lab::search_space of `k` once per run at the methods' settings (the params of `held` held
  // there, the search starting from `base`): the best confirmed point, or nullopt (searched
  // before, a lab that cannot, nothing passed, or a space of one point).
  std::optional<ParamPoint> search_space(const KernelSpec& k, const tune::SearchSpace& space,
                                         const ParamPoint& base, const ParamPoint& held);

  // The round's measured branches profiled in one session (profile_branches), kept by
  // evaluation key; the champion's profile, from them when it was one, else profiled now.
  struct RoundBranch {
    Variant variant;
    fs::path dir;     // where its profile goes
    std::string key;  // its evaluation key
  };
  void profile_round(const fs::path& session_dir, const std::vector<RoundBranch>& measured);
  Expected<Explanation> champion_profile(const std::string& key, const Variant& champ,
                                         const fs::path& dir);

  // --- the proposer hook ------------------------------------------------------------------------
  static std::string shell_quote(const std::string& s);

  Expected<void> iterate_with_proposer(int i, Opened& o);

  // Written branches measured: the fastest correct one (and the methods it claims), and the
  // leave-one-out ablations by the method they leave out.
  struct Outcome {
    std::optional<std::pair<Variant, Measured>> winner;
    std::string key;
    std::vector<std::string> methods;
    std::map<std::string, std::pair<Variant, Measured>> ablations;
    std::vector<Measured> measured;  // per branch, in order
    std::optional<std::size_t> winner_index;
  };
  Outcome measure_branches(const std::vector<BranchRecord>& branches);

  // Every branch's predictions against what happened: `time` by each branch's median, the
  // other metrics by the branch's own profile (every branch that measured and predicts a
  // metric, profiled in one session).
  // What a prediction is judged by after a branch: its profile's advice metrics and its median.
  static MetricValues metrics_after(const Explanation& e, double median_s);
  void judge_predictions(int i, VersionRecord& rec, const std::vector<BranchRecord>& branches,
                         const Outcome& out, const MetricValues& before);

  static std::string describe(const CommandResult& r);

  // The proposal directory's kernel files, with branches.json when the proposer wrote one.
  Expected<std::vector<BranchRecord>> proposed_branches(const fs::path& dir, const Variant& champ);

  // A new champion is checked again with a secret seed beside seed 1 (a measurement checks
  // seed 1 only), then runs under compute-sanitizer: a wrong output or a finding rejects it; a
  // tool that could not check is recorded, and the champion stands.
  bool passes_champion_checks(VersionRecord& rec, const Variant& v);

  // The iteration failed: its methods are implementation_failed, filed in the experience DB
  // under `cause` (none where nothing of theirs was tried: the proposer did not deliver).
  Expected<void> record_failure(int i, Opened& o, const std::string& why, PitfallCause cause);
  // Why a round whose branches all failed failed, by the most frequent status among them
  // (wrong results, no build, a crash): the pitfall its methods are filed under.
  static PitfallCause failure_cause(const std::vector<Measured>& failed);

  // The winner against the champion, SASS, attribution, record. `ablations` are an agent's
  // leave-one-out branches (method -> measured variant); null: switch the toggles off.
  Expected<void> decide(int i, Opened& o, const Variant& wv, const Measured& wm,
                        const std::string& key,
                        const std::map<std::string, std::pair<Variant, Measured>>* ablations);

 public:
  // --- agent-driven mode ----------------------------------------------------------------------
  Expected<RunState> agent_open();

  Expected<RunState> agent_branch(const BranchRecord& given, const std::filesystem::path& file);

  Expected<RunState> agent_close();

  Expected<RunState> agent_finalize();

 private:
  Expected<void> open_existing();

  // An agent's attribution: each claimed method of the winner against the branch that
  // leaves it out; without such a branch a method is classified only by its SASS.
  void attribute_agent(VersionRecord& rec, const Variant& wv, const Measured& wm,
                       const std::map<std::string, std::pair<Variant, Measured>>& ablations,
                       bool accepted, const fs::path& dir);

 public:
  // Past outcomes for this family, chip and bottleneck: a preference that breaks ties, and
  // methods that failed repeatedly here are left out. Returns what to say in the hypothesis.
  std::vector<std::string> consult_experience(const std::string& bottleneck);
  // What did not pay here before, one line a method and cause (ExperienceDb::pitfalls).
  std::vector<std::string> pitfalls_here(const std::string& bottleneck);

  std::string chip();
  std::string family() const;

  // Every method outcome of an iteration, as experience for later runs.
  void record_experience(const VersionRecord& rec);

  // The branches' predictions, judged, as experience: which beliefs about a method held.
  void record_predictions(const VersionRecord& rec);

  Expected<void> close_iteration(int i, VersionRecord rec, bool accepted);

  SelectionContext selection(const Explanation& e, const Variant& champ);

  // The ranked answer: methods already in the champion's machine code are not suggested.
  Advice advice_for(const Explanation& e, const Variant& champ, double champ_time);

  // The chosen methods on, over the champion (or the method kernel's default with every
  // method off); the other branches vary the params no method switches. A problem without
  // method toggles has its methods in separate kernels: branches then spread over every
  // kernel with params (the champion's point for its own kernel, defaults for the others).
  std::vector<Variant> make_branches(const Variant& champ, const std::vector<std::string>& methods,
                                     int i, int attempt);

  std::vector<Variant> kernel_branches(const KernelSpec& kernel, const Variant& champ,
                                       const std::vector<std::string>& methods, int i, int attempt,
                                       int count);

  // SASS check and leave-one-out ablation of each method the winner applies.
  void attribute(VersionRecord& rec, const Variant& wv, const Measured& wm,
                 const std::vector<std::string>& methods, const fs::path& dir);

  // Each method's SASS verdict on the winner, written to sass.json and kept for the experience DB.
  std::map<std::string, SassVerdictKind> verify_in_sass(const Variant& wv,
                                                        const std::vector<std::string>& methods,
                                                        const fs::path& dir);

  // Leave-one-out: the time the winner saves over its variant without method m, and whether
  // that is more than the noise (at least 1 %).
  static void attribute_one(VersionRecord& rec, const std::string& m, const Measured& winner,
                            const Measured& without);

  // kopt's own predictions for a round whose methods it chose: each method's strongest trigger
  // metric moves toward the value where the method stops being worth trying, and the time goes
  // down. Written in hypothesis.md at the open, judged at the close like an agent's.
  struct LoopPrediction {
    Prediction prediction;
    std::string method;  // whose trigger; empty for the time
  };
  std::vector<LoopPrediction> loop_predictions(const std::vector<MethodCandidate>& chosen,
                                               const MetricValues& metrics) const;
  // The round's predictions against its fastest branch `wv`: its profile from the round's ncu
  // session (profile_round), else its median alone (the counters then unmeasured, with why);
  // into rec.predictions and hypothesis.md's "Judged" section.
  void judge_loop_predictions(int i, VersionRecord& rec, const Variant& wv,
                              const std::string& winner_key, const Measured& winner);
  std::string hypothesis(int i, const Explanation& e, const SelectionContext& ctx,
                         const std::vector<MethodCandidate>& chosen, const Variant& champ,
                         double champ_time);

 private:
  const Problem& m_p;
  const MethodCatalog& m_catalog;
  OptimizeOptions m_o;
  Lab& m_lab;
  GitRepo* m_git;
  const KernelSpec* m_mk;
  RunState m_state;
  SelectionContext m_ctx;
  std::vector<MethodCandidate> m_chosen;
  Advice m_advice;
  MetricValues m_open_metrics;  // the champion's profile at the open: the "before" of predictions
  bool m_agent = false;         // an agent writes the branches: any catalog method is open to it
  std::vector<BranchRecord> m_closing_branches;  // the branches of the iteration being closed
  std::string m_candidate_branch;
  std::vector<std::string> m_experience_notes;
  // The experience DB's pitfalls for the open's situation (family, chip, bottleneck).
  std::vector<std::string> m_pitfalls;
  PitfallCause m_failure_cause = PitfallCause::none;  // record_failure's, for record_experience
  std::map<std::string, std::string> m_last_sass;
  std::map<std::string, std::pair<Explanation, fs::path>>
      m_round_profiles;  // evaluation key -> profile, its folder
};

}  // namespace kopt::optimize::optimizer_detail
