// The playbooks' observed section: written from the experience DB below a marker, the authors'
// text above it kept byte for byte, replaced (not appended) when written again, and valid TOML.
#include "kopt/store/experience_playbook.hpp"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

const char* k_playbook = R"(implementation = "CUDA C++"

[[bottleneck]]
class = "memory-bound"
strategy = "Move fewer bytes."
methods = ["vectorized_global_loads", "tma"]

[[method]]
id = "warp_shuffle_reduction"
what = "Reduce in registers."
)";

ExperienceRecord rec(const std::string& method, double speedup, PitfallCause cause,
                     const std::string& run) {
  ExperienceRecord r;
  r.family = "softmax";
  r.chip = "sm_90";
  r.bottleneck = "memory-bound";
  r.method = method;
  r.speedup = speedup;
  r.verdict = experience_verdict(speedup);
  r.cause = cause;
  r.run_id = run;
  return r;
}

TEST(ExperiencePlaybook, TheObservedSectionIsWrittenBelowTheAuthorsTextAndReplaced) {
  EXPECT_EQ(playbook_methods(k_playbook),
            (std::set<std::string>{"tma", "vectorized_global_loads", "warp_shuffle_reduction"}));
  std::vector<ExperienceRecord> records = {
      // newest first, as the DB lists them
      rec("vectorized_global_loads", 1.4, PitfallCause::none, "softmax@3"),
      rec("vectorized_global_loads", 0.97, PitfallCause::no_sass_change, "softmax@2"),
      rec("warp_shuffle_reduction", 1.2, PitfallCause::none, "softmax@1"),
      rec("cp_async", 1.3, PitfallCause::none, "softmax@1")};  // not this playbook's
  const HitsBySituation p = {{{"memory-bound", "sm_90"}, {{"vectorized_global_loads", {1, 1}}}}};
  std::string once = with_observed_section(k_playbook, records, p, "x.db", "2026-11-26");
  ASSERT_EQ(once.rfind(k_playbook, 0), 0u) << once;  // the authors' text first, unchanged
  EXPECT_NE(once.find(k_observed_marker), std::string::npos);
  EXPECT_EQ(once.find("cp_async"), std::string::npos) << once;
  toml::table t;
  try {
    t = toml::parse(once);
  } catch (const toml::parse_error& e) {
    FAIL() << e.description() << "\n" << once;
  }
  auto* observed = t["observed"].as_array();
  ASSERT_TRUE(observed);
  ASSERT_EQ(observed->size(), 2u);
  const toml::table& v = *(*observed)[0].as_table();  // the most tried first
  EXPECT_EQ(v["method"].value_or(std::string()), "vectorized_global_loads");
  EXPECT_EQ(v["trials"].value_or(0), 2);
  EXPECT_EQ(v["successes"].value_or(0), 1);
  EXPECT_DOUBLE_EQ(v["best_gain"].value_or(0.0), 1.4);
  EXPECT_EQ((*v["pitfalls"].as_array())[0].value_or(std::string()), "no SASS change (1)");
  EXPECT_EQ(v["predictions"].value_or(std::string()), "1 of 1 confirmed");
  EXPECT_EQ((*v["evidence"].as_array())[0].value_or(std::string()),
            "softmax@3 (softmax): 1.40x, success");
  // Written again with one more record: replaced, not appended.
  records.insert(records.begin(), rec("tma", 1.1, PitfallCause::none, "softmax@4"));
  std::string twice = with_observed_section(once, records, p, "x.db", "2026-11-27");
  EXPECT_EQ(twice.rfind(k_playbook, 0), 0u);
  std::size_t markers = 0;
  for (std::size_t at = 0; (at = twice.find(k_observed_marker, at)) != std::string::npos; ++at)
    ++markers;
  EXPECT_EQ(markers, 1u);
  EXPECT_EQ(toml::parse(twice)["observed"].as_array()->size(), 3u);
  // Nothing of its methods: the section goes.
  EXPECT_EQ(with_observed_section(twice, {}, {}, "x.db", "d"), std::string(k_playbook));
}

TEST(ExperiencePlaybook, EveryPlaybookThatNamesMethodsIsRewrittenInPlace) {
  TempDir dir("kopt-playbooks");
  ASSERT_TRUE(write_text_atomic(dir.path() / "cuda.toml", k_playbook));
  ASSERT_TRUE(write_text_atomic(dir.path() / "ncu-metrics.toml", "[[metric]]\nname = \"x\"\n"));
  auto db = ExperienceDb::open(dir.path() / "e.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->add({rec("tma", 1.3, PitfallCause::none, "r")}));
  auto written = write_observed_playbooks(*db, dir.path(), "2026-11-26");
  ASSERT_TRUE(written) << written.error().to_string();
  ASSERT_EQ(written->size(), 1u);  // the metric guide names no method
  EXPECT_EQ((*written)[0], (std::pair<std::string, std::size_t>{"cuda.toml", 1}));
  EXPECT_NE(read_text_file(dir.path() / "cuda.toml")->find("method = \"tma\""), std::string::npos);
  EXPECT_EQ(*read_text_file(dir.path() / "ncu-metrics.toml"), "[[metric]]\nname = \"x\"\n");
  auto missing = write_observed_playbooks(*db, dir.path() / "nowhere", "d");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
}

}  // namespace
}  // namespace kopt
