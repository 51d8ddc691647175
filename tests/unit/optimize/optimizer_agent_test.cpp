// The loop driven by an agent (kopt iter open / branch / close): what a branch may become
// champion, bad branches refused with nothing lost, and predictions recorded then judged.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kopt/backend/device_info.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/optimize/optimizer.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/report/run_report.hpp"
#include "optimize_fixture.hpp"

namespace kopt::optimize {
namespace {
namespace fs = std::filesystem;
using fixtures::Optimize;
using test::FakeLab;

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

}  // namespace
}  // namespace kopt::optimize
