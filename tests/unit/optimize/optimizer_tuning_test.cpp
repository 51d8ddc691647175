// The loop's branches as tuning: kernels without method toggles, the first round that tunes a
// kernel searching its space, and the whole space screened near the peak.
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
using fixtures::Optimize;
using test::FakeLab;

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
