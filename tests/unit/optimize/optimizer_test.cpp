// The optimization loop's decisions on a fake lab whose timings and profiles follow a
// known model, so every choice can be checked: methods, champion, ablation, stop rules,
// and resuming after a kill at any measurement.
#include "kopt/optimize/optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "fake_lab.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/report/run_report.hpp"

namespace kopt::optimize {
namespace {
namespace fs = std::filesystem;
using test::FakeLab;
using test::k_problem;

class Optimize : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"ref.cu", "naive.cu", "tuned.cu"})
      std::ofstream(m_dir.path() / f) << "// " << f << "\n";
    auto p = parse_problem(k_problem, m_dir.path() / "kopt.toml");
    ASSERT_TRUE(p) << p.error().to_string();
    m_problem = *p;
    m_catalog = *builtin_method_catalog();
  }
  OptimizeOptions options(const std::string& run = "run") {
    OptimizeOptions o;
    o.run_dir = m_dir.path() / run;
    o.iterations = 5;
    o.branches = 4;
    o.patience = 2;
    return o;
  }
  // The toy problem with no method toggles: its branches only tune.
  Expected<Problem> without_methods() {
    std::string text = k_problem;
    return parse_problem(text.substr(0, text.find("[kernels.methods]")),
                         m_dir.path() / "kopt.toml");
  }
  Expected<RunState> run(FakeLab& lab, const OptimizeOptions& o) {
    return run_optimize(m_problem, m_catalog, o, lab, nullptr);
  }
  // A run of `lab` (run directory `name`) that files its outcomes in a fresh experience DB.
  Expected<ExperienceDb> run_into_db(FakeLab& lab, const std::string& name) {
    auto db = ExperienceDb::open(m_dir.path() / "experience.db");
    if (!db) return db;
    OptimizeOptions o = options(name);
    o.experience = &*db;
    if (auto s = run(lab, o); !s) return Unexpected(s.error());
    return db;
  }
  TempDir m_dir{"kopt-optimize"};
  Problem m_problem;
  MethodCatalog m_catalog;
};

TEST_F(Optimize, FromTheNaiveKernelToTheMethodsThatTheProfileCallsFor) {
  FakeLab lab;
  auto s = run(lab, options());
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_GE(s->versions.size(), 2u);
  EXPECT_EQ(s->versions[0].outcome, VersionOutcome::baseline);
  EXPECT_EQ(s->versions[0].kernel, "naive");
  const VersionRecord& v1 = s->versions[1];
  EXPECT_EQ(v1.outcome, VersionOutcome::accepted);
  // Ranked: the profile is latency-bound, so the latency axis's method comes first.
  EXPECT_EQ(v1.methods,
            (std::vector<std::string>{"warp_shuffle_reduction", "vectorized_global_loads"}));
  EXPECT_EQ(v1.point, (ParamPoint{{"BLOCK", 256}, {"USE_SHFL", 1}, {"VEC", 4}}));
  EXPECT_NEAR(v1.median_s, 35e-6, 1e-12);
  EXPECT_EQ(v1.verdict, "faster");
  EXPECT_EQ(v1.method_outcomes.at("warp_shuffle_reduction"), MethodOutcome::effective);
  EXPECT_EQ(v1.method_outcomes.at("vectorized_global_loads"), MethodOutcome::effective);
  EXPECT_NEAR(v1.attribution_ms.at("warp_shuffle_reduction"), 0.015, 1e-9);
  EXPECT_NEAR(v1.attribution_ms.at("vectorized_global_loads"), 0.010, 1e-9);
  EXPECT_NEAR(v1.before_s, 100e-6, 1e-12);  // the champion when iteration 1 began
  // Of the 100 -> 35 us gain, on a log scale: without it the kernel takes 50 us.
  EXPECT_NEAR(v1.attribution_pct.at("warp_shuffle_reduction"),
              100.0 * std::log(50.0 / 35) / std::log(100.0 / 35), 1e-6);
  // Then nothing is triggered and no tuning beats the champion: two iterations, then stop.
  EXPECT_EQ(s->champion()->index, 1);
  EXPECT_EQ(s->status, RunPhase::finished);
  EXPECT_EQ(s->stop_reason, "no improvement for 2 iterations");
  EXPECT_EQ(s->versions.back().outcome, VersionOutcome::rejected);
  for (const auto& [key, n] : lab.measured) EXPECT_EQ(n, 1) << "measured twice: " << key;
  for (const char* f : {"run.json", "env.json", "target.md", "v0/params.json", "v1/hypothesis.md",
                        "v1/attribution.json", "v1/sass.json", "v1/tuned.cu",
                        "v1/ablations/warp_shuffle_reduction/bench.json"})
    EXPECT_TRUE(fs::exists(m_dir.path() / "run" / f)) << f;
  auto h = read_text_file(m_dir.path() / "run/v1/hypothesis.md");
  ASSERT_TRUE(h);
  for (const char* part :
       {"## Hypothesis", "## Rationale", "## Expected", "kopt__stall_share_barrier"})
    EXPECT_NE(h->find(part), std::string::npos) << part;
}

TEST_F(Optimize, ARoundsBranchesShareOneProfileSessionAndTheNextChampionIsNotProfiledAgain) {
  FakeLab lab;
  auto s = run(lab, options());
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_GE(s->versions.size(), 3u);
  // One session per iteration, of every branch that measured and was not profiled before.
  EXPECT_GE(lab.profile_sessions.size(), 1u);
  EXPECT_LE(lab.profile_sessions.size(), static_cast<std::size_t>(s->iteration));
  EXPECT_GE(lab.profile_sessions.at(0), 2u);
  // v1 won iteration 1 as a branch: iteration 2 starts from that profile, not a new one.
  const VersionRecord& v1 = s->versions[1];
  ASSERT_EQ(v1.outcome, VersionOutcome::accepted);
  EXPECT_EQ(lab.profiled.at(Variant{v1.kernel, v1.point, ""}.label()), 1);
  for (const auto& [label, n] : lab.profiled)
    EXPECT_EQ(n, 1) << label << " profiled " << n << " times";

  FakeLab alone;
  OptimizeOptions o = options("run-alone");
  o.profile_branches = false;
  ASSERT_TRUE(run(alone, o));
  EXPECT_TRUE(alone.profile_sessions.empty());
  // Profiled when it is first champion; the later iterations from it reuse that profile.
  EXPECT_EQ(alone.profiled.at(Variant{v1.kernel, v1.point, ""}.label()), 1);
}

TEST_F(Optimize, AMethodMissingFromTheSassIsImplementationFailedAndNotReused) {
  FakeLab lab;
  lab.not_landing = {"vectorized_global_loads"};
  auto s = run(lab, options());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->versions[1].method_outcomes.at("vectorized_global_loads"),
            MethodOutcome::implementation_failed);
  EXPECT_EQ(s->method_history().at("vectorized_global_loads"),
            MethodOutcome::implementation_failed);
}

TEST_F(Optimize, StopRules) {
  FakeLab peak;
  peak.near_peak = true;
  auto a = run(peak, options("a"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stop_reason, "near_peak: Δc, Δm and Δl all below 0.15");
  FakeLab target;
  target.target = 40e-6;
  auto b = run(target, options("b"));
  ASSERT_TRUE(b);
  EXPECT_NE(b->stop_reason.find("target met"), std::string::npos);
  EXPECT_EQ(b->versions.size(), 2u);  // v1 (35 us) meets the 40 us target
  FakeLab once;
  OptimizeOptions o = options("c");
  o.iterations = 1;
  auto c = run(once, o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stop_reason, "iteration limit (1)");
}

TEST_F(Optimize, WhenEveryBranchFailsItRetriesThenRecordsAndMovesOn) {
  FakeLab lab;
  lab.fail_tuned = true;
  auto s = run(lab, options());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->versions[1].outcome, VersionOutcome::failed);
  EXPECT_EQ(s->versions[1].method_outcomes.at("warp_shuffle_reduction"),
            MethodOutcome::implementation_failed);
  EXPECT_EQ(s->champion()->index, 0);
  EXPECT_LE(lab.measure_calls,
            1 + 2 * 4 * (1 + 3) + 4);  // baseline, 2 iterations x 4 branches x (1 + 3 retries)
}

TEST_F(Optimize, AKillAtAnyMeasurementResumesWithoutMeasuringTwice) {
  FakeLab whole;
  auto reference = run(whole, options("whole"));
  ASSERT_TRUE(reference);
  for (int kill = 1; kill <= whole.measure_calls; ++kill) {
    std::string dir = "killed" + std::to_string(kill);
    FakeLab first;
    first.crash_after = kill;
    auto killed = run(first, options(dir));
    ASSERT_FALSE(killed) << "kill " << kill;
    FakeLab second;
    OptimizeOptions o = options(dir);
    o.resume = true;
    auto resumed = run(second, o);
    ASSERT_TRUE(resumed) << "kill " << kill << ": " << resumed.error().to_string();
    EXPECT_EQ(to_json(*resumed)["versions"].size(), to_json(*reference)["versions"].size())
        << "kill " << kill;
    EXPECT_EQ(resumed->champion()->point, reference->champion()->point) << "kill " << kill;
    for (const auto& [key, n] : second.measured)
      EXPECT_FALSE(first.measured.contains(key)) << "kill " << kill << ": " << key;
  }
}

// Found on the CPU: under a small file-size limit the baseline's measurement failed ("write
// failed"), and once the limit was lifted --resume repeated that failure from the recorded
// evaluation. A failure of kopt's environment is no verdict: exit 3, nothing recorded, and a
// resume measures again.
TEST_F(Optimize, AFailureOfKoptsEnvironmentIsNotRecordedAndAResumeMeasuresAgain) {
  FakeLab broken;
  broken.environment_fails = {1};
  auto first = run(broken, options());
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().kind, ErrorKind::environment) << first.error().to_string();
  EXPECT_NE(first.error().message.find("kopt's environment"), std::string::npos);
  auto recorded = load_run_state(m_dir.path() / "run");
  if (recorded) {
    EXPECT_TRUE(recorded->evaluations.empty());
  }
  FakeLab healthy;
  OptimizeOptions o = options();
  o.resume = true;
  auto resumed = run(healthy, o);
  ASSERT_TRUE(resumed) << resumed.error().to_string();
  EXPECT_DOUBLE_EQ(resumed->versions.at(0).median_s, 100e-6);
  EXPECT_FALSE(healthy.measured.empty());  // measured again, not read back
  // A branch's measurement the environment lost is no record either.
  FakeLab flaky;
  flaky.environment_fails = {2};
  auto through = run(flaky, options("flaky"));
  ASSERT_TRUE(through) << through.error().to_string();
  for (const auto& [key, e] : through->evaluations)
    EXPECT_EQ(e.error.find("write failed"), std::string::npos) << key;
}

TEST_F(Optimize, AnExistingRunNeedsResumeAndMaskedVersionsDoNotSteer) {
  FakeLab lab;
  ASSERT_TRUE(run(lab, options()));
  FakeLab again;
  auto twice = run(again, options());
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("--resume"), std::string::npos);
  auto s = load_run_state(m_dir.path() / "run");
  ASSERT_TRUE(s);
  ASSERT_TRUE(set_masked(*s, {1}, true, "a partial restart"));
  EXPECT_EQ(s->champion()->index, 0);
  EXPECT_FALSE(s->method_history().contains("warp_shuffle_reduction"));
}

// `optimize --from vK` restarts a recorded run from vK: the accepted versions after it are
// masked (kept on record, out of every decision), the run goes on for --iterations more, and
// nothing measured before is measured again. `--restart mask-half` masks the newer half of the
// accepted versions. A version that was never a champion, or a run that is not there, is bad
// input.
TEST_F(Optimize, ARunRestartsFromARecordedVersionOrWithHalfItsHistoryMasked) {
  FakeLab lab;
  auto first = run(lab, options());
  ASSERT_TRUE(first);
  ASSERT_EQ(first->champion()->index, 1);
  const int done = first->iteration;
  OptimizeOptions o = options();
  o.iterations = 1;
  o.from_version = 0;
  std::vector<std::string> said;
  o.log = [&](const std::string& line) { said.push_back(line); };
  FakeLab again;
  auto restarted = run(again, o);
  ASSERT_TRUE(restarted) << restarted.error().to_string();
  EXPECT_TRUE(restarted->versions.at(1).masked);
  EXPECT_NE(restarted->versions.at(1).mask_reason.find("restarted from v0 (--from)"),
            std::string::npos);
  EXPECT_EQ(restarted->iteration, done + 1);  // one more iteration
  ASSERT_EQ(restarted->versions.size(), static_cast<std::size_t>(done + 2));
  // From v0 again, the same methods win again: from measurements already on record.
  EXPECT_EQ(restarted->versions.back().outcome, VersionOutcome::accepted);
  EXPECT_EQ(restarted->champion()->index, done + 1);
  for (const auto& [key, n] : again.measured)
    EXPECT_FALSE(lab.measured.contains(key)) << "measured again: " << key;
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& l) {
    return l.find("v1 masked, the champion is v0 at 100 us; 1 more iteration(s)") !=
           std::string::npos;
  })) << (said.empty() ? "" : said.front());
  // The newer half of the accepted versions (v1 is masked already: v4 alone) masked.
  OptimizeOptions h = options();
  h.iterations = 1;
  h.restart = OptimizeOptions::Restart::mask_half;
  FakeLab third;
  auto halved = run(third, h);
  ASSERT_TRUE(halved) << halved.error().to_string();
  EXPECT_TRUE(halved->versions.at(static_cast<std::size_t>(done + 1)).masked);
  EXPECT_NE(halved->versions.at(static_cast<std::size_t>(done + 1)).mask_reason.find("mask-half"),
            std::string::npos);
  // Bad input: a rejected version, a version past the end, no run.
  OptimizeOptions bad = options();
  bad.from_version = 2;  // rejected
  FakeLab fourth;
  auto refused = run(fourth, bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_NE(refused.error().message.find("never a champion"), std::string::npos)
      << refused.error().message;
  bad.from_version = 99;
  EXPECT_FALSE(run(fourth, bad));
  OptimizeOptions none = options("nowhere");
  none.restart = OptimizeOptions::Restart::mask_half;
  auto missing = run(fourth, none);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no run in"), std::string::npos);
  EXPECT_FALSE(fs::exists(m_dir.path() / "nowhere"));
}

// A resume at other dims is refused, naming the dim: every recorded time is of the run's
// shape (it used to go on silently). A resume that asks for no more iterations says so.
TEST_F(Optimize, AResumeAtOtherDimsIsRefusedAndOneWithNothingLeftSaysSo) {
  FakeLab lab;
  OptimizeOptions o = options();
  o.iterations = 1;
  auto first = run(lab, o);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->dims.at("n"), m_problem.dims.at(0).value);
  Problem other = m_problem;
  other.dims.at(0).value *= 2;
  o.resume = true;
  FakeLab again;
  auto refused = run_optimize(other, m_catalog, o, again, nullptr);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_NE(refused.error().message.find("measures n="), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(again.measure_calls, 0);
  std::vector<std::string> said;
  o.log = [&](const std::string& line) { said.push_back(line); };
  auto same = run(again, o);
  ASSERT_TRUE(same) << same.error().to_string();
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said.front().find("has done 1 iteration(s)"), std::string::npos) << said.front();
  EXPECT_NE(said.front().find("--iterations 1 asks for no more"), std::string::npos);
}

TEST_F(Optimize, ANewerOrDamagedRunJsonIsRefusedAndKept) {
  fs::create_directories(m_dir.path() / "run");
  ASSERT_TRUE(write_text_atomic(m_dir.path() / "run/run.json",
                                "{\"schema_version\": 99, \"problem\": \"toy\"}"));
  FakeLab lab;
  OptimizeOptions o = options();
  o.resume = true;
  auto s = run(lab, o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("newer kopt"), std::string::npos);
  EXPECT_EQ(*read_text_file(m_dir.path() / "run/run.json"),
            "{\"schema_version\": 99, \"problem\": \"toy\"}");
  EXPECT_EQ(lab.measure_calls, 0);
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

TEST_F(Optimize, EveryIterationIsAGitCommitOfTheRunDirectory) {
  if (!find_program("git")) GTEST_SKIP() << "git is not installed";
  SystemCommandRunner runner;
  GitRepo git(runner, m_dir.path() / "run");
  FakeLab lab;
  auto s = run_optimize(m_problem, m_catalog, options(), lab, &git);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_TRUE(s->git_error.empty()) << s->git_error;
  for (const auto& v : s->versions) EXPECT_FALSE(v.git_commit.empty()) << "v" << v.index;
  std::set<std::string> commits;
  for (const auto& v : s->versions) commits.insert(v.git_commit);
  EXPECT_EQ(commits.size(), s->versions.size());
  CommandResult log = runner.run({"git", "-C", (m_dir.path() / "run").string(), "log", "--oneline"},
                                 std::chrono::seconds(30));
  EXPECT_NE(log.out.find("v1: accepted tuned"), std::string::npos) << log.out;
  EXPECT_NE(log.out.find("finished: no improvement"), std::string::npos) << log.out;
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

TEST_F(Optimize, WithoutMethodTogglesTheBranchesTuneTheKernelsThatHaveParams) {
  auto p = without_methods();
  ASSERT_TRUE(p) << p.error().to_string();
  FakeLab lab;
  auto s = run_optimize(*p, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_GE(s->versions.size(), 2u);
  EXPECT_EQ(s->versions[1].outcome, VersionOutcome::accepted);
  EXPECT_EQ(s->versions[1].kernel, "tuned");
  EXPECT_TRUE(s->versions[1].methods.empty());  // nothing to switch: tuning only
  EXPECT_LE(s->versions[1].median_s, 40e-6);
}

// Optimize uses tune's machinery: the first round that tunes a kernel screens its space (held at
// the methods' settings) and its champion is a branch; a later round, or a resumed run, does not
// search that space again.
TEST_F(Optimize, TheFirstRoundThatTunesAKernelSearchesItsSpace) {
  auto p = without_methods();
  ASSERT_TRUE(p) << p.error().to_string();
  FakeLab lab;
  lab.searches = true;
  OptimizeOptions o = options();
  o.branches = 1;  // one branch a round: only the space's champion can find the optimum at once
  auto s = run_optimize(*p, m_catalog, o, lab, nullptr);
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_GE(s->versions.size(), 2u);
  EXPECT_EQ(s->versions[1].outcome, VersionOutcome::accepted);
  EXPECT_EQ(s->versions[1].point,
            (ParamPoint{{"BLOCK", 256}, {"USE_SHFL", 1}, {"VEC", 4}}));  // the space's best: 35 us
  EXPECT_NEAR(s->versions[1].median_s, 35e-6, 1e-9);
  EXPECT_EQ(lab.searched.size(), 1u);  // once
  EXPECT_EQ(s->searched_spaces, (std::vector<std::string>{"tuned"}));
  // Screened exhaustively, the space has nothing left to draw: the next round has no branch,
  // and the run stops on that instead of measuring points the screen has seen.
  EXPECT_EQ(s->exhausted_spaces, (std::vector<std::string>{"tuned"}));
  EXPECT_EQ(s->versions.size(), 2u);
  EXPECT_EQ(s->stop_reason.rfind("nothing new to try", 0), 0u) << s->stop_reason;
  // Resumed, the space is not searched again.
  OptimizeOptions more = o;
  more.resume = true;
  more.iterations = o.iterations + 1;
  FakeLab again;
  again.searches = true;
  auto resumed = run_optimize(*p, m_catalog, more, again, nullptr);
  ASSERT_TRUE(resumed) << resumed.error().to_string();
  EXPECT_TRUE(again.searched.empty());
}

// Near the peak from the first profile, the loop still screens the whole space of the kernel it
// tunes (method params included) before it stops: it never stops above what `kopt tune` finds.
// Only then does near_peak end the run.
TEST_F(Optimize, NearThePeakTheWholeSpaceIsScreenedBeforeTheStop) {
  FakeLab lab;
  lab.near_peak = true;
  lab.searches = true;
  OptimizeOptions o = options();
  o.branches = 1;
  auto s = run(lab, o);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->stop_reason, "near_peak: Δc, Δm and Δl all below 0.15");
  ASSERT_EQ(s->versions.size(), 2u);
  EXPECT_EQ(s->versions[1].outcome, VersionOutcome::accepted);
  EXPECT_TRUE(s->versions[1].methods.empty());  // tuning only, no method switched
  EXPECT_NE(s->versions[1].hypothesis.find("screening the whole space of tuned"), std::string::npos)
      << s->versions[1].hypothesis;
  EXPECT_NEAR(s->versions[1].median_s, 35e-6, 1e-9);                   // the whole space's best
  EXPECT_EQ(s->searched_spaces, (std::vector<std::string>{"tuned"}));  // not held at any method
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

class AgentMode : public Optimize {
 protected:
  fs::path branch_file(const std::string& name, const std::string& body) {
    fs::path f = m_dir.path() / name;
    std::ofstream(f) << body;
    return f;
  }
  BranchRecord branch(std::vector<std::string> methods, std::string ablates = "") {
    BranchRecord b;
    b.point = {{"BLOCK", 256}, {"USE_SHFL", 1}, {"VEC", 4}};
    b.methods = std::move(methods);
    b.ablates = std::move(ablates);
    return b;
  }
};

TEST_F(AgentMode, OpenBranchCloseFinalize) {
  FakeLab lab;
  auto opened = iter_open(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(opened) << opened.error().to_string();
  ASSERT_TRUE(opened->open);
  EXPECT_EQ(opened->open->index, 1);
  EXPECT_EQ(opened->versions.size(), 1u);  // the baseline
  EXPECT_FALSE(opened->open->suggestions.empty());
  EXPECT_TRUE(fs::exists(m_dir.path() / "run/v1/hypothesis.md"));
  EXPECT_TRUE(fs::is_directory(m_dir.path() / "run/v1/branches"));
  // Opening twice is refused: the open iteration must be closed first.
  EXPECT_FALSE(iter_open(m_problem, m_catalog, options(), lab, nullptr));

  auto good = branch_file("good.cu", "__global__ void tuned(float* x, float* y) {} // time=30\n");
  auto without =
      branch_file("without.cu", "__global__ void tuned(float* x, float* y) {} // time=42\n");
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab,
                          branch({"warp_shuffle_reduction", "vectorized_global_loads"}), good));
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab,
                          branch({}, "warp_shuffle_reduction"), without));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  EXPECT_FALSE(closed->open);
  const VersionRecord& v1 = closed->versions.at(1);
  EXPECT_EQ(v1.outcome, VersionOutcome::accepted);
  EXPECT_NEAR(v1.median_s, 30e-6, 1e-12);
  EXPECT_EQ(v1.method_outcomes.at("warp_shuffle_reduction"), MethodOutcome::effective);
  EXPECT_NEAR(v1.attribution_ms.at("warp_shuffle_reduction"), 0.012, 1e-9);
  EXPECT_FALSE(v1.method_outcomes.contains(
      "vectorized_global_loads"));  // no ablation branch: not attributed
  EXPECT_NE(v1.note.find("vectorized_global_loads"), std::string::npos);
  EXPECT_TRUE(fs::exists(m_dir.path() / "run/v1/branches/a1/tuned.cu"));
  auto done = iter_finalize(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, RunPhase::finished);
}

// A branch whose samples form two clusters (what a kernel that skips its work on every other
// launch gives) is faster on paper, and refused as champion with the flag on record.
TEST_F(AgentMode, AFlaggedBranchIsNotAcceptedAsChampion) {
  FakeLab lab;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  auto flagged = branch_file(
      "flagged.cu", "__global__ void tuned(float* x, float* y) {} // time=20 flag=bimodal\n");
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab, branch({"warp_shuffle_reduction"}),
                          flagged));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  const VersionRecord& v1 = closed->versions.at(1);
  EXPECT_EQ(v1.outcome, VersionOutcome::rejected);
  ASSERT_EQ(v1.flags.size(), 1u);
  EXPECT_EQ(v1.flags[0].rfind("bimodal (", 0), 0u);
  EXPECT_NE(v1.note.find("flagged: bimodal"), std::string::npos) << v1.note;
  EXPECT_NE(v1.note.find("not accepted as the champion"), std::string::npos) << v1.note;
  EXPECT_EQ(closed->champion()->index, 0);  // the baseline is still the champion
  // The flags stay with the evaluation: a resumed run sees them without measuring again.
  auto s = load_run_state(m_dir.path() / "run");
  ASSERT_TRUE(s);
  bool recorded = false;
  for (const auto& [key, e] : s->evaluations) recorded = recorded || !e.flags.empty();
  EXPECT_TRUE(recorded);
}

// The champion's median against ncu's duration of the same build: a disagreement is on record
// with the version the iteration made, and in report.md; an agreement leaves nothing.
TEST_F(Optimize, TheChampionsTimeIsCrossCheckedAgainstNcu) {
  FakeLab lab;
  lab.ncu_time_factor = 2.0;
  auto s = run(lab, options());
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_GE(s->versions.size(), 2u);
  const std::string& note = s->versions[1].cross_check;
  EXPECT_NE(note.find("kopt's median 100.0 us and ncu's gpu__time_duration 200.0 us"),
            std::string::npos)
      << note;
  FakeLab agreeing;
  agreeing.ncu_time_factor = 1.05;
  auto quiet = run(agreeing, options("run-agreeing"));
  ASSERT_TRUE(quiet) << quiet.error().to_string();
  for (const auto& v : quiet->versions) EXPECT_EQ(v.cross_check, "") << v.index;
}

// A branch that is faster but has a shared-memory race is turned down once compute-sanitizer
// has looked at it, with the finding on record; a clean one is accepted with "clean" on record,
// and one the tool could not check is accepted and says unverifiable.
TEST_F(AgentMode, ARacyBranchIsNotAcceptedAsChampion) {
  FakeLab lab;
  lab.sanitizing = true;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  auto racy =
      branch_file("racy.cu", "__global__ void tuned(float* x, float* y) {} // time=20 race\n");
  ASSERT_TRUE(
      iter_branch(m_problem, m_catalog, options(), lab, branch({"warp_shuffle_reduction"}), racy));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  const VersionRecord v1 = closed->versions.at(1);  // a copy: `closed` is replaced below
  EXPECT_EQ(v1.outcome, VersionOutcome::rejected);
  EXPECT_EQ(v1.sanitizer.rfind("findings: ", 0), 0u) << v1.sanitizer;
  EXPECT_NE(v1.note.find("racecheck: Race reported between"), std::string::npos) << v1.note;
  EXPECT_NE(v1.note.find("tuned.cu:7"), std::string::npos) << v1.note;
  EXPECT_EQ(closed->champion()->index, 0);
  ASSERT_EQ(lab.sanitized.size(), 1u);

  OptimizeOptions again = options();
  again.resume = true;  // the run exists now, as for kopt iter
  auto reopened = iter_open(m_problem, m_catalog, again, lab, nullptr);
  ASSERT_TRUE(reopened) << reopened.error().to_string();
  auto clean = branch_file("clean.cu", "__global__ void tuned(float* x, float* y) {} // time=25\n");
  ASSERT_TRUE(
      iter_branch(m_problem, m_catalog, again, lab, branch({"warp_shuffle_reduction"}), clean));
  closed = iter_close(m_problem, m_catalog, again, lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  EXPECT_EQ(closed->versions.at(2).outcome, VersionOutcome::accepted);
  EXPECT_EQ(closed->versions.at(2).sanitizer, "clean: memcheck: clean; racecheck: clean");

  ASSERT_TRUE(iter_open(m_problem, m_catalog, again, lab, nullptr));
  auto unchecked = branch_file(
      "unchecked.cu", "__global__ void tuned(float* x, float* y) {} // time=20 nosanitizer\n");
  ASSERT_TRUE(
      iter_branch(m_problem, m_catalog, again, lab, branch({"warp_shuffle_reduction"}), unchecked));
  closed = iter_close(m_problem, m_catalog, again, lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  EXPECT_EQ(closed->versions.at(3).outcome, VersionOutcome::accepted);
  EXPECT_EQ(closed->versions.at(3).sanitizer.rfind("unverifiable: ", 0), 0u)
      << closed->versions.at(3).sanitizer;
  auto s = load_run_state(m_dir.path() / "run");  // on record
  ASSERT_TRUE(s);
  EXPECT_EQ(s->versions.at(1).sanitizer, v1.sanitizer);
}

// A branch right on seed 1 only (what every measurement checks) is faster on paper; checked
// again on a secret seed before it becomes champion, it is turned down.
TEST_F(AgentMode, ABranchRightOnSeedOneOnlyIsNotAcceptedAsChampion) {
  FakeLab lab;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  auto cheat = branch_file("cheat.cu",
                           "__global__ void tuned(float* x, float* y) {} // time=10 seed1only\n");
  ASSERT_TRUE(
      iter_branch(m_problem, m_catalog, options(), lab, branch({"warp_shuffle_reduction"}), cheat));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  const VersionRecord& v1 = closed->versions.at(1);
  EXPECT_EQ(v1.outcome, VersionOutcome::rejected);
  EXPECT_NE(v1.note.find("wrong on the secret seed"), std::string::npos) << v1.note;
  EXPECT_EQ(closed->champion()->index, 0);
}

TEST_F(AgentMode, BadBranchesAreRefusedAndNothingIsLost) {
  FakeLab lab;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  auto prose = branch_file("notes.txt", "this is not a kernel\n");
  auto r1 = iter_branch(m_problem, m_catalog, options(), lab, branch({}), prose);
  ASSERT_FALSE(r1);
  EXPECT_NE(r1.error().message.find("not a kernel"), std::string::npos);
  auto ok = branch_file("ok.cu", "__global__ void tuned(float* x, float* y) {}\n");
  auto r2 = iter_branch(m_problem, m_catalog, options(), lab, branch({"teleportation"}), ok);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().field, "--method");
  BranchRecord bad_point = branch({});
  bad_point.point["VEC"] = 3;
  EXPECT_FALSE(iter_branch(m_problem, m_catalog, options(), lab, bad_point, ok));
  auto missing =
      iter_branch(m_problem, m_catalog, options(), lab, branch({}), m_dir.path() / "nope.cu");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  auto none = iter_close(m_problem, m_catalog, options(), lab, nullptr);  // no branch yet
  ASSERT_FALSE(none);
  auto s = load_run_state(m_dir.path() / "run");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->open);  // still open, nothing lost
  EXPECT_EQ(s->versions.size(), 1u);
  // A branch that does not compile is a failed candidate, recorded.
  FakeLab failing;
  failing.fail_tuned = true;
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), failing,
                          branch({"warp_shuffle_reduction"}), ok));
  auto closed = iter_close(m_problem, m_catalog, options(), failing, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  EXPECT_EQ(closed->versions.at(1).outcome, VersionOutcome::failed);
}

TEST_F(AgentMode, NoRunYetIsAClearError) {
  FakeLab lab;
  auto r = iter_close(m_problem, m_catalog, options("absent"), lab, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("kopt iter open"), std::string::npos);
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

TEST_F(Optimize, OutcomesGoToTheExperienceDbAndRepeatedFailuresAreLeftOut) {
  FakeLab lab;
  auto db = run_into_db(lab, "first");
  ASSERT_TRUE(db) << db.error().to_string();
  ExperienceFilter all;
  auto recs = db->list(all);
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 2u);  // v1's two methods, both effective
  for (const auto& r : *recs) {
    EXPECT_EQ(r.family, "toy");
    EXPECT_EQ(r.chip, "sm_90");
    EXPECT_EQ(r.backend, "cuda");
    EXPECT_EQ(r.verdict, ExperienceVerdict::success);
    EXPECT_EQ(r.sass_verdict, "verified");
    // The speedup is the run's (100 -> 35 us), not the method's leave-one-out ratio (the
    // issue: "stores the ablation ratio (1.24x) where the run gained 1.06x"); that one is
    // the method's own factor, apart.
    EXPECT_NEAR(r.time_before_s, 100e-6, 1e-12);
    EXPECT_NEAR(r.speedup, 100.0 / 35, 1e-9);
    ASSERT_TRUE(r.own_factor());
    EXPECT_NEAR(*r.own_factor(), r.method == "warp_shuffle_reduction" ? 50.0 / 35 : 45.0 / 35,
                1e-9);
  }
  // Two failures of the warp shuffle on this family and chip (from other runs): the next
  // run leaves it out and says why.
  ExperienceRecord fail;
  fail.family = "toy";
  fail.chip = "sm_90";
  fail.bottleneck = "latency-bound";
  fail.method = "warp_shuffle_reduction";
  fail.speedup = 0.99;
  for (const char* run_id : {"x", "y"}) {
    fail.run_id = run_id;
    fail.uid.clear();
    ASSERT_TRUE(db->add({fail}));
  }
  auto db2 = ExperienceDb::open(m_dir.path() / "fresh.db");
  ASSERT_TRUE(db2);
  ASSERT_TRUE(db2->merge(m_dir.path() / "experience.db"));
  FakeLab lab2;
  OptimizeOptions o2 = options("second");
  o2.experience = &*db2;
  auto s = run(lab2, o2);
  ASSERT_TRUE(s);
  // With one success on record beside the two failures, the method is not demoted.
  EXPECT_EQ(s->versions[1].methods.size(), 2u);
  auto db3 = ExperienceDb::open(m_dir.path() / "only-failures.db");
  ASSERT_TRUE(db3);
  fail.uid.clear();
  fail.run_id = "x";
  ASSERT_TRUE(db3->add({fail}));
  fail.uid.clear();
  fail.run_id = "y";
  ASSERT_TRUE(db3->add({fail}));
  FakeLab lab3;
  OptimizeOptions o3 = options("third");
  o3.experience = &*db3;
  auto t = run(lab3, o3);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->versions[1].methods, std::vector<std::string>{"vectorized_global_loads"});
  auto h3 = read_text_file(m_dir.path() / "third/v1/hypothesis.md");
  ASSERT_TRUE(h3);
  EXPECT_NE(h3->find("experience: warp_shuffle_reduction left out"), std::string::npos) << *h3;
}

// A method that did not land in the machine code is a pitfall record (method, family, chip,
// bottleneck, cause); the next optimize of the problem opens with it listed, in the autonomous
// loop's hypothesis.md and log and in an agent's `iter open` (issue: "a second optimize of the
// same problem opens with the first run's pitfalls listed").
TEST_F(Optimize, ASecondRunOpensWithTheFirstRunsPitfalls) {
  FakeLab lab;
  lab.not_landing = {"vectorized_global_loads"};
  auto db = run_into_db(lab, "first");
  ASSERT_TRUE(db) << db.error().to_string();
  auto first = load_run_state(m_dir.path() / "first");
  ASSERT_TRUE(first);
  const std::string bottleneck = first->versions.at(1).bottleneck;
  ExperienceFilter f;
  f.method = "vectorized_global_loads";
  auto recs = db->list(f);
  ASSERT_TRUE(recs);
  ASSERT_FALSE(recs->empty());
  EXPECT_EQ(recs->front().cause, PitfallCause::no_sass_change);
  f.method = "warp_shuffle_reduction";
  EXPECT_EQ(db->list(f)->front().cause, PitfallCause::none);  // it paid
  auto found = db->pitfalls("toy", "sm_90", bottleneck);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().method, "vectorized_global_loads");
  EXPECT_EQ(found->front().times, 1u);
  EXPECT_TRUE(db->pitfalls("toy", "sm_80", bottleneck)->empty());  // another chip: not here
  // The second run, autonomous: its first open lists the pitfall.
  FakeLab again;
  std::vector<std::string> log;
  OptimizeOptions o = options("second");
  o.experience = &*db;
  o.log = [&](const std::string& line) { log.push_back(line); };
  ASSERT_TRUE(run(again, o));
  auto h = read_text_file(m_dir.path() / "second/v1/hypothesis.md");
  ASSERT_TRUE(h);
  EXPECT_NE(h->find("## Pitfalls seen here before"), std::string::npos) << *h;
  EXPECT_NE(h->find("- vectorized_global_loads: no SASS change, 1 time"), std::string::npos) << *h;
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("pitfall seen here before: vectorized_global_loads: no SASS change") !=
           std::string::npos;
  }));
  // An agent's open of a third run: the pitfall is in the open iteration's record.
  FakeLab agent;
  OptimizeOptions a = options("third");
  a.experience = &*db;
  auto opened = iter_open(m_problem, m_catalog, a, agent, nullptr);
  ASSERT_TRUE(opened) << opened.error().to_string();
  ASSERT_TRUE(opened->open);
  ASSERT_FALSE(opened->open->pitfalls.empty());
  EXPECT_EQ(opened->open->pitfalls.front().rfind("vectorized_global_loads: no SASS change", 0), 0u)
      << opened->open->pitfalls.front();
}

// A round whose branches all fail files its methods under the failures' cause.
TEST_F(Optimize, ARoundWhoseBranchesDoNotBuildIsThatPitfall) {
  FakeLab lab;
  lab.fail_tuned = true;  // every branch: compile_failed
  auto db = run_into_db(lab, "failing");
  ASSERT_TRUE(db) << db.error().to_string();
  auto s = load_run_state(m_dir.path() / "failing");
  ASSERT_TRUE(s);
  EXPECT_NE(s->versions.at(1).note.find("every branch failed (after retries): does not build"),
            std::string::npos)
      << s->versions.at(1).note;
  auto recs = db->list({});
  ASSERT_TRUE(recs);
  ASSERT_FALSE(recs->empty());
  for (const auto& r : *recs) EXPECT_EQ(r.cause, PitfallCause::does_not_build) << r.method;
}

// The loop states what it expects of a round (each chosen method's trigger metric toward its
// good value, the time down) and judges it at the close like an agent's `--expect`: the
// verdicts are in the version, hypothesis.md and the experience DB's predictions table, and
// recommend shows each method's hit rate (issue: "every prediction judged").
TEST_F(Optimize, TheLoopsOwnPredictionsAreJudgedAndKept) {
  FakeLab lab;
  auto db = run_into_db(lab, "predicting");
  ASSERT_TRUE(db) << db.error().to_string();
  auto s = load_run_state(m_dir.path() / "predicting");
  ASSERT_TRUE(s) << s.error().to_string();
  const VersionRecord& v1 = s->versions.at(1);
  ASSERT_EQ(v1.outcome, VersionOutcome::accepted);
  std::map<std::string, std::string> verdicts;
  for (const auto& p : v1.predictions) {
    EXPECT_EQ(p.branch, "loop");
    verdicts[p.text] = std::string(name_of(p.verdict));
  }
  // Barrier stalls 4.5 -> 0.5 with the warp shuffle on; 100 -> 35 us.
  EXPECT_EQ(verdicts["kopt__stall_share_barrier:down"], "confirmed") << v1.predictions.size();
  EXPECT_EQ(verdicts["time:down"], "confirmed");
  // A round of tuning alone from v1 finds nothing faster: its time prediction is refuted.
  const VersionRecord& v2 = s->versions.at(2);
  ASSERT_EQ(v2.outcome, VersionOutcome::rejected);
  ASSERT_EQ(v2.predictions.size(), 1u);
  EXPECT_EQ(v2.predictions[0].text, "time:down");
  EXPECT_EQ(v2.predictions[0].verdict, PredictionVerdict::refuted);
  auto h = read_text_file(m_dir.path() / "predicting/v1/hypothesis.md");
  ASSERT_TRUE(h);
  auto expected = h->find("## Expected"), judged = h->find("## Judged");
  ASSERT_NE(expected, std::string::npos);
  ASSERT_NE(judged, std::string::npos) << *h;
  EXPECT_LT(expected, judged);
  EXPECT_NE(h->find("`kopt__stall_share_barrier:down` (warp_shuffle_reduction", expected),
            std::string::npos)
      << *h;
  EXPECT_NE(h->find("confirmed", judged), std::string::npos) << *h;
  ExperienceFilter loop;
  loop.method = "warp_shuffle_reduction";
  auto kept = db->list_predictions(loop);
  ASSERT_TRUE(kept);
  ASSERT_GE(kept->size(), 2u);
  for (const auto& r : *kept) {
    EXPECT_EQ(r.hypothesis, v1.hypothesis);
    EXPECT_EQ(r.methods, v1.methods);
    EXPECT_TRUE(r.accepted);
    EXPECT_NE(r.prediction.verdict, PredictionVerdict::not_judged);
  }
  auto recs = db->recommend("toy", "sm_90", v1.bottleneck);
  ASSERT_TRUE(recs);
  auto shfl = std::find_if(recs->begin(), recs->end(), [](const Recommendation& r) {
    return r.method == "warp_shuffle_reduction";
  });
  ASSERT_NE(shfl, recs->end());
  EXPECT_GE(shfl->predictions_judged, 2u);
  EXPECT_EQ(shfl->predictions_confirmed, shfl->predictions_judged);
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

class Proposer : public Optimize {
 protected:
  OptimizeOptions with_proposer(const std::string& run, const std::string& script,
                                double timeout_s = 30) {
    fs::path file = m_dir.path() / (run + ".sh");
    std::ofstream(file) << "#!/bin/sh\n" << script;
    fs::permissions(file, fs::perms::owner_all);
    OptimizeOptions o = options(run);
    o.proposer = file.string();
    o.proposer_timeout_s = timeout_s;
    o.patience = 2;
    o.iterations = 3;
    return o;
  }
};

TEST_F(Proposer, AScriptedProposerClosesTheLoop) {
  // Writes a branch (30 us) and its ablation without the warp shuffle (40 us), once.
  auto o = with_proposer("good", R"SH(
cat > "$KOPT_PROPOSAL_DIR/stdin.json"
[ "$KOPT_ITERATION" = 1 ] || exit 0
echo '__global__ void tuned(float* x, float* y) {} // time=30' > "$KOPT_PROPOSAL_DIR/fast.cu"
echo '__global__ void tuned(float* x, float* y) {} // time=40' > "$KOPT_PROPOSAL_DIR/no_shfl.cu"
cat > "$KOPT_PROPOSAL_DIR/branches.json" <<'EOF2'
[{"file": "fast.cu", "set": {"VEC": 4}, "methods": ["warp_shuffle_reduction"]},
 {"file": "no_shfl.cu", "ablates": "warp_shuffle_reduction"}]
EOF2
)SH");
  FakeLab lab;
  auto s = run(lab, o);
  ASSERT_TRUE(s) << s.error().to_string();
  const VersionRecord& v1 = s->versions.at(1);
  EXPECT_EQ(v1.outcome, VersionOutcome::accepted);
  EXPECT_NEAR(v1.median_s, 30e-6, 1e-12);
  EXPECT_EQ(v1.method_outcomes.at("warp_shuffle_reduction"), MethodOutcome::effective);
  EXPECT_NEAR(v1.attribution_ms.at("warp_shuffle_reduction"), 0.010, 1e-9);
  auto seen = read_text_file(m_dir.path() / "good/v1/proposal/stdin.json");
  ASSERT_TRUE(seen);
  auto j = nlohmann::json::parse(*seen);
  EXPECT_EQ(j["iteration"], 1);
  EXPECT_EQ(j["champion"]["kernel"], "naive");
  EXPECT_FALSE(j["suggested_methods"].empty());
  // Later iterations wrote nothing: recorded as failed, and the run stopped on patience.
  EXPECT_EQ(s->versions.at(2).outcome, VersionOutcome::failed);
  EXPECT_EQ(s->versions.at(2).note, "the proposer wrote no kernel files");
  EXPECT_EQ(s->stop_reason, "no improvement for 2 iterations");
}

TEST_F(Proposer, HangsFailuresAndFloodsAreFailedBranchesAndTheRunGoesOn) {
  FakeLab hang_lab;
  auto hang = run(hang_lab, with_proposer("hang", "sleep 30\n", 0.5));
  ASSERT_TRUE(hang) << hang.error().to_string();
  EXPECT_EQ(hang->versions.at(1).note, "the proposer timed out");
  EXPECT_EQ(hang->status, RunPhase::finished);
  FakeLab fail_lab;
  auto fail = run(fail_lab, with_proposer("fail", "echo broken >&2\nexit 7\n"));
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->versions.at(1).note, "the proposer failed: exit code 7");
  FakeLab flood_lab;
  flood_lab.fail_tuned = true;  // and what it writes does not compile
  auto flood = run(flood_lab, with_proposer("flood", R"SH(
head -c 5000000 /dev/zero | tr '\0' x
echo '__global__ void tuned(float* x, float* y) {}' > "$KOPT_PROPOSAL_DIR/k.cu"
)SH"));
  ASSERT_TRUE(flood) << flood.error().to_string();
  EXPECT_EQ(flood->versions.at(1).note, "every proposed branch failed: does not build");
  auto log = read_text_file(m_dir.path() / "flood/v1/proposer.log");
  ASSERT_TRUE(log);
  EXPECT_LT(log->size(), 10000u);  // the flood is cut to its tail
}

// The methods of a round whose proposer failed were never tried: they are no pitfall (they
// were filed as "crashed" before, the default of a cause nobody set).
TEST_F(Proposer, AProposerThatFailsFilesNoPitfallForTheMethods) {
  auto db = ExperienceDb::open(m_dir.path() / "experience.db");
  ASSERT_TRUE(db);
  FakeLab lab;
  OptimizeOptions o = with_proposer("failing", "exit 7\n");
  o.experience = &*db;
  auto s = run(lab, o);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->versions.at(1).note, "the proposer failed: exit code 7");
  ASSERT_FALSE(s->versions.at(1).methods.empty());
  auto recs = db->list({});
  ASSERT_TRUE(recs);
  ASSERT_FALSE(recs->empty());
  for (const auto& r : *recs) EXPECT_EQ(r.cause, PitfallCause::none) << r.method << " " << r.note;
  EXPECT_TRUE(db->pitfalls("toy", "sm_90", s->versions.at(1).bottleneck)->empty());
}

}  // namespace
}  // namespace kopt::optimize

namespace kopt::optimize {
namespace {

// The open's answer is ranked or a reasoned stop; a branch's hypothesis and predictions are
// recorded before measurement and judged at close: time by each branch's median, the other
// metrics on the candidate's profile against the champion's at the open.
TEST_F(AgentMode, PredictionsAreRecordedThenJudgedAgainstWhatTheMetricsDid) {
  FakeLab lab;
  auto opened = iter_open(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(opened) << opened.error().to_string();
  const auto& advice = opened->open->advice;
  ASSERT_TRUE(advice.is_object());
  EXPECT_EQ(advice["headroom"]["bounding"], "memory");
  EXPECT_FALSE(advice["stop"].get<bool>());
  ASSERT_FALSE(advice["suggestions"].empty());
  EXPECT_EQ(advice["suggestions"][0]["rank"], 1);
  EXPECT_TRUE(opened->open->metrics.contains(k_time_metric));

  auto good = branch_file("good.cu", "__global__ void tuned(float* x, float* y) {} // time=30\n");
  BranchRecord b = branch({"warp_shuffle_reduction", "vectorized_global_loads"});
  b.hypothesis = "shuffles remove the barrier stalls; float4 loads put more bytes in flight";
  for (const char* e :
       {"time:down:50%", "stall_barrier:down", "dram_throughput:up:10%", "sm_throughput:up:10%"})
    b.expect.push_back(*parse_prediction(e));
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab, b, good));
  BranchRecord bad = branch({});
  bad.expect.push_back(*parse_prediction("no_such_metric:up"));
  auto refused = iter_branch(m_problem, m_catalog, options(), lab, bad, good);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_NE(refused.error().message.find("no_such_metric"), std::string::npos);

  auto db = ExperienceDb::open(m_dir.path() / "experience.db");
  ASSERT_TRUE(db);
  OptimizeOptions with_db = options();
  with_db.experience = &*db;
  auto closed = iter_close(m_problem, m_catalog, with_db, lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  const VersionRecord& v1 = closed->versions.at(1);
  EXPECT_EQ(v1.agent_hypothesis, b.hypothesis);
  auto kept = db->list_predictions({});
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->size(), 4u);  // the experience DB keeps them, judged
  for (const auto& r : *kept) {
    EXPECT_EQ(r.hypothesis, b.hypothesis);
    EXPECT_TRUE(r.accepted);
    EXPECT_NE(r.prediction.verdict, PredictionVerdict::not_judged);
  }
  ExperienceFilter refuted;
  refuted.verdict = "refuted";
  refuted.method = "warp_shuffle_reduction";
  EXPECT_EQ(db->list_predictions(refuted)->size(), 1u);
  ASSERT_EQ(v1.predictions.size(), 4u);
  std::map<std::string, std::string> verdicts;
  for (const auto& p : v1.predictions) verdicts[p.text] = name_of(p.verdict);
  EXPECT_EQ(verdicts["time:down:50%"], "confirmed");           // 100 us -> 30 us
  EXPECT_EQ(verdicts["stall_barrier:down"], "confirmed");      // 0.45 -> 0.05
  EXPECT_EQ(verdicts["dram_throughput:up:10%"], "confirmed");  // 30 -> 88
  EXPECT_EQ(verdicts["sm_throughput:up:10%"], "refuted");      // 20 -> 20
  EXPECT_EQ(v1.predictions[0].branch, "a1");
  auto h = read_text_file(m_dir.path() / "run/v1/hypothesis.md");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rfind("# The branches' hypotheses", 0), 0u);
  EXPECT_NE(h->find(b.hypothesis), std::string::npos);
  EXPECT_NE(h->find("# Iteration 1: hypothesis"), std::string::npos);  // kopt's analysis kept below
  auto saved = load_run_state(m_dir.path() / "run");
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->versions.at(1).predictions.size(), 4u);
  std::string report = report_markdown(load_run_report(m_dir.path() / "run"));
  EXPECT_NE(report.find("## Predictions against outcomes"), std::string::npos);
  EXPECT_NE(report.find("v1 a1: `sm_throughput:up:10%` — refuted"), std::string::npos) << report;
  EXPECT_NE(report.find("(agent) " + b.hypothesis), std::string::npos);
}

// The champion an agent's branch made is that branch's code: the next iteration compares new
// branches with it, not with the problem's kernel at the same point.
// Every branch that measured and predicts a counter is profiled, all in one session: the
// slower branch's prediction is judged by its own profile, not left unmeasured.
TEST_F(AgentMode, EveryBranchsCounterPredictionsAreJudgedByItsOwnProfileFromOneSession) {
  FakeLab lab;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  lab.profile_sessions.clear();
  auto fast = branch_file("fast.cu", "__global__ void tuned(float* x, float* y) {} // time=30\n");
  auto slow = branch_file("slow.cu", "__global__ void tuned(float* x, float* y) {} // time=60\n");
  BranchRecord a = branch({"warp_shuffle_reduction"});
  a.expect.push_back(*parse_prediction("stall_barrier:down"));
  BranchRecord b = branch({"vectorized_global_loads"});
  b.point["USE_SHFL"] = 0;  // the fake's profile: VEC=4 lifts DRAM throughput, barrier stalls stay
  b.expect.push_back(*parse_prediction("dram_throughput:up:10%"));
  b.expect.push_back(*parse_prediction("stall_barrier:down"));
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab, a, fast));
  ASSERT_TRUE(iter_branch(m_problem, m_catalog, options(), lab, b, slow));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  EXPECT_EQ(lab.profile_sessions, (std::vector<std::size_t>{2}));
  std::map<std::string, std::string> verdicts;
  for (const auto& p : closed->versions.at(1).predictions)
    verdicts[p.branch + " " + p.text] = name_of(p.verdict);
  EXPECT_EQ(verdicts["a1 stall_barrier:down"], "confirmed");
  EXPECT_EQ(verdicts["a2 dram_throughput:up:10%"], "confirmed");  // 30 -> 88, on a2's own profile
  EXPECT_EQ(verdicts["a2 stall_barrier:down"], "refuted");        // 4.5 -> 4.5
}

TEST_F(AgentMode, TheNextIterationComparesWithTheAgentsCodeThatWon) {
  FakeLab lab;
  OptimizeOptions o = options();
  ASSERT_TRUE(iter_open(m_problem, m_catalog, o, lab, nullptr));
  ASSERT_TRUE(iter_branch(
      m_problem, m_catalog, o, lab, branch({"warp_shuffle_reduction"}),
      branch_file("a.cu", "__global__ void tuned(float* x, float* y) {} // time=30\n")));
  auto first = iter_close(m_problem, m_catalog, o, lab, nullptr);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->champion()->index, 1);
  EXPECT_FALSE(first->champion()->source.empty());
  o.resume = true;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, o, lab, nullptr));
  // 32 us beats the problem's tuned kernel at that point (35 us), not the agent's 30 us.
  ASSERT_TRUE(iter_branch(
      m_problem, m_catalog, o, lab, branch({"warp_shuffle_reduction"}),
      branch_file("b.cu", "__global__ void tuned(float* x, float* y) {} // time=32\n")));
  auto second = iter_close(m_problem, m_catalog, o, lab, nullptr);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->versions.at(2).outcome, VersionOutcome::rejected);
  EXPECT_EQ(second->champion()->index, 1);
}

// Every ablation submitted is timed against the candidate, also when the iteration is rejected.
TEST_F(AgentMode, AnAblationIsAttributedWhenTheIterationIsRejected) {
  FakeLab lab;
  ASSERT_TRUE(iter_open(m_problem, m_catalog, options(), lab, nullptr));
  ASSERT_TRUE(iter_branch(
      m_problem, m_catalog, options(), lab, branch({"warp_shuffle_reduction"}),
      branch_file("slow.cu", "__global__ void tuned(float* x, float* y) {} // time=120\n")));
  ASSERT_TRUE(iter_branch(
      m_problem, m_catalog, options(), lab, branch({}, "warp_shuffle_reduction"),
      branch_file("slower.cu", "__global__ void tuned(float* x, float* y) {} // time=130\n")));
  auto closed = iter_close(m_problem, m_catalog, options(), lab, nullptr);
  ASSERT_TRUE(closed) << closed.error().to_string();
  const VersionRecord& v1 = closed->versions.at(1);
  EXPECT_EQ(v1.outcome, VersionOutcome::rejected);
  EXPECT_NEAR(v1.attribution_ms.at("warp_shuffle_reduction"), 0.010, 1e-9);
  EXPECT_EQ(v1.method_outcomes.at("warp_shuffle_reduction"), MethodOutcome::effective);
}

// An OpenCL device has no compute capability: its outcomes are filed under its name and
// backend (the issue: `experience list` recorded the OpenCL device as "sm_0").
TEST_F(Optimize, OutcomesOnAnOpenclDeviceAreFiledUnderItsName) {
  struct OpenclLab : FakeLab {
    std::string chip() override { return "pthread-skylake"; }
    std::string backend() override { return "opencl"; }
  };
  OpenclLab lab;
  auto db = run_into_db(lab, "opencl");
  ASSERT_TRUE(db) << db.error().to_string();
  auto recs = db->list(ExperienceFilter{});
  ASSERT_TRUE(recs);
  ASSERT_FALSE(recs->empty());
  for (const auto& r : *recs) {
    EXPECT_EQ(r.chip, "pthread-skylake");
    EXPECT_EQ(r.backend, "opencl");
  }
  DeviceInfo cpu;
  cpu.backend = "opencl";
  cpu.name = "pthread-skylake";
  EXPECT_EQ(cpu.chip(), "pthread-skylake");
  DeviceInfo h100;
  h100.cc_major = 9;
  EXPECT_EQ(h100.chip(), "sm_90");
}

}  // namespace
}  // namespace kopt::optimize
