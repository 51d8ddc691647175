// The optimization loop's decisions on a fake lab whose timings and profiles follow a
// known model, so every choice can be checked: methods, champion, ablation, stop rules,
// resuming after a kill at any measurement, and each iteration a commit of the run.
#include "kopt/optimize/optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kopt/backend/device_info.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/report/run_report.hpp"
#include "optimize_fixture.hpp"

namespace kopt::optimize {
namespace {
namespace fs = std::filesystem;
using fixtures::Optimize;
using test::FakeLab;

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
