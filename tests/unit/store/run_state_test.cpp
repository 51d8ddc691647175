#include "kopt/store/run_state.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/tools/git.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

RunState sample() {
  RunState s;
  s.problem = "softmax";
  s.problem_dir = "examples/softmax";
  s.device = "NVIDIA H100 80GB HBM3";
  s.created_at = "2026-11-21T16:00:00Z";
  EvaluationRecord e{"k0",  "naive", {}, VariantStatus::ok,     1.38e-3,
                     0.002, 20,      "", "2026-11-21T16:00:01Z"};
  s.evaluations[e.key] = e;
  VersionRecord v0;
  v0.index = 0;
  v0.kernel = "naive";
  v0.evaluation = "k0";
  v0.median_s = 1.38e-3;
  v0.outcome = VersionOutcome::baseline;
  VersionRecord v1 = v0;
  v1.index = 1;
  v1.iteration = 1;
  v1.kernel = "tuned";
  v1.point = {{"BLOCK", 256}, {"VEC", 4}};
  v1.methods = {"warp_shuffle_reduction"};
  v1.method_outcomes = {{"warp_shuffle_reduction", MethodOutcome::effective},
                        {"vectorized_global_loads", MethodOutcome::ineffective}};
  v1.attribution_ms = {{"warp_shuffle_reduction", 0.9}};
  v1.outcome = VersionOutcome::accepted;
  s.versions = {v0, v1};
  s.iteration = 1;
  return s;
}

TEST(RunState, RoundTripsThroughTheFile) {
  TempDir dir("kopt-run");
  ASSERT_TRUE(save_run_state(dir.path(), sample()));
  auto s = load_run_state(dir.path());
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->schema_version, k_run_schema_version);
  EXPECT_EQ(to_json(*s), to_json(sample()));
  EXPECT_EQ(s->champion()->index, 1);
  EXPECT_EQ(s->find_evaluation("k0")->median_s, 1.38e-3);
  EXPECT_EQ(s->find_evaluation("nope"), nullptr);
}

TEST(RunState, MaskedVersionsDoNotSteer) {
  RunState s = sample();
  EXPECT_EQ(s.method_history().at("vectorized_global_loads"), MethodOutcome::ineffective);
  ASSERT_TRUE(set_masked(s, {1}, true, "measured while another job shared the GPU"));
  EXPECT_EQ(s.champion()->index, 0);
  EXPECT_TRUE(s.method_history().empty());
  EXPECT_EQ(s.versions[1].mask_reason, "measured while another job shared the GPU");
  ASSERT_TRUE(set_masked(s, {1}, false, ""));
  EXPECT_EQ(s.champion()->index, 1);
  auto bad = set_masked(s, {7}, true, "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("v0..v1"), std::string::npos);
}

TEST(RunState, NewerSchemaAndDamageAreBadInputAndChangeNothing) {
  TempDir dir("kopt-run");
  nlohmann::json j = to_json(sample());
  j["schema_version"] = k_run_schema_version + 1;
  ASSERT_TRUE(write_text_atomic(run_state_path(dir.path()), j.dump()));
  auto newer = load_run_state(dir.path());
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.error().kind, ErrorKind::bad_input);
  EXPECT_NE(newer.error().message.find("newer kopt"), std::string::npos);
  EXPECT_EQ(*read_text_file(run_state_path(dir.path())), j.dump());  // untouched

  std::string text = to_json(sample()).dump();
  auto cut = run_state_from_json(text.substr(0, text.size() / 2), "run.json");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().to_string().find("run.json"), std::string::npos);
  auto none = load_run_state(dir.path() / "missing");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no run here"), std::string::npos);
  j = to_json(sample());
  j["versions"][1]["index"] = 5;
  auto order = run_state_from_json(j.dump(), "run.json");
  ASSERT_FALSE(order);
  EXPECT_EQ(order.error().field, "versions[1].index");
}

TEST(RunState, AKilledWriterLeavesTheLastCompleteState) {
  // A writer killed mid-write leaves its temporary file; run.json is the previous state.
  TempDir dir("kopt-run");
  RunState s = sample();
  ASSERT_TRUE(save_run_state(dir.path(), s));
  ASSERT_TRUE(
      write_text_atomic(dir.path() / "run.json.tmp.12345", "{\"schema_version\": 1, \"probl"));
  auto back = load_run_state(dir.path());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->versions.size(), 2u);
}

TEST(GitRepo, EachCommitIsAVersion) {
  TempDir dir("kopt-git");
  SystemCommandRunner runner;
  GitRepo git(runner, dir.path());
  auto init = git.init();
  if (!init && init.error().kind == ErrorKind::environment) GTEST_SKIP() << init.error().message;
  ASSERT_TRUE(init) << init.error().to_string();
  ASSERT_TRUE(write_text_atomic(dir.path() / "v0" / "kernel.cu", "// v0\n"));
  auto c0 = git.commit_all("v0: baseline");
  ASSERT_TRUE(c0) << c0.error().to_string();
  EXPECT_EQ(c0->size(), 40u);
  auto same = git.commit_all("nothing new");
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, *c0);
  ASSERT_TRUE(write_text_atomic(dir.path() / "v1" / "kernel.cu", "// v1\n"));
  auto c1 = git.commit_all("v1: warp shuffles");
  ASSERT_TRUE(c1);
  EXPECT_NE(*c1, *c0);
  EXPECT_TRUE(git.init());  // a repository already: nothing to do
}

}  // namespace
}  // namespace kopt
