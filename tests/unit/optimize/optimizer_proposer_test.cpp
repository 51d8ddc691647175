// A proposer hook (a script) in place of the agent: the loop closed, and a proposer that hangs,
// fails or floods is a failed branch, never a stopped run.
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
