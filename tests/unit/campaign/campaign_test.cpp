// `kopt campaign` over a fake step runner: which problems a source holds, the steps each gets
// and their command lines, resumption (what ran is not run again, what the machine failed is),
// a changed problem started again, budgets, and the leaderboard made from the records.
#include "kopt/campaign/campaign.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "campaign/campaign_files.hpp"
#include "kopt/campaign/leaderboard.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt::campaign {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// A problem with a C++ reference (no torch baselines) and one kernel with a space of two points.
std::string spec(const std::string& name, bool python) {
  return "name = \"" + name +
         "\"\n[dims]\nn = 64\n[[tensors]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\nrole = "
         "\"input\"\n[[tensors]]\nname = \"out\"\ndtype = \"f32\"\nshape = [\"n\"]\nrole = "
         "\"output\"\n[cost]\nflops = \"n\"\nbytes = \"8 * n\"\n" +
         (python
              ? "[reference]\nkind = \"python\"\nsource = \"ref.py\"\n"
              : "[reference]\nkind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"ref\"\nargs = "
                "[\"x\", \"out\", \"n\"]\n[[kernels]]\nname = \"k\"\nsource = \"k.cu\"\nentry "
                "= \"k\"\nargs = [\"x\", \"out\", \"n\"]\ngrid = [\"ceil_div(n, BLOCK)\"]\nblock "
                "= [\"BLOCK\"]\n[kernels.params]\nBLOCK = [128, 256]\n");
}

const char* k_kernelbench_file =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return "
    "torch.relu(x)\ndef get_inputs():\n    return [torch.randn(64)]\ndef get_init_inputs():\n    "
    "return []\n";

json variant(const std::string& kernel, const std::string& status, double median) {
  return {{"kernel", kernel},
          {"status", status},
          {"params", json::object()},
          {"floor_s", 1e-6},
          {"pct_bandwidth_ceiling", status == "ok" ? 100e-6 / median : 0.0},
          {"pct_compute_ceiling", status == "ok" ? 1e-6 / median : 0.0},
          {"summary", {{"median", median}}},
          {"error", status == "ok" ? "" : "it broke"}};
}

class CampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path suite = m_dir.path() / "suite";
    ASSERT_TRUE(write_text_atomic(suite / "b_vec" / "kopt.toml", spec("b_vec", false)));
    ASSERT_TRUE(write_text_atomic(suite / "b_vec" / "k.cu", "// kernel\n"));
    ASSERT_TRUE(write_text_atomic(suite / "b_vec" / "ref.cpp", "// reference\n"));
    ASSERT_TRUE(write_text_atomic(suite / "nested" / "a_red" / "kopt.toml", spec("a_red", false)));
    ASSERT_TRUE(write_text_atomic(suite / "kb" / "10_Later.py", k_kernelbench_file));
    ASSERT_TRUE(write_text_atomic(suite / "kb" / "2_Relu.py", k_kernelbench_file));
    ASSERT_TRUE(write_text_atomic(suite / "kb" / "helper.py", "x = 1\n"));
    m_options.sources = {suite};
    m_options.out = m_dir.path() / "camp";
    m_options.kopt = "kopt";
    m_options.budget_s = 100;
    m_options.backend = "cuda";  // the spec's kernel is CUDA: these steps are for a CUDA device
  }

  // Answers each step as the command would; `answer` may override by command and problem.
  StepRunner runner() {
    return [this](const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
      std::lock_guard lock(m_mutex);
      m_calls.push_back(argv);
      m_timeouts.push_back(timeout);
      std::size_t at = command_at(argv);
      std::string command = argv.at(at);
      std::string target = argv.at(command == "import" ? at + 2 : at + 1);
      std::string name = fs::path(target).filename().string();
      if (command == "import") {
        name = fs::path(target).stem().string();
        fs::path out = argv.at(at + 4);
        (void)write_text_atomic(out / "kopt.toml",
                                spec(name, true) + "\n" + kernelbench_import_stamp() + "\n");
        (void)write_text_atomic(out / "ref.py", "def reference(**kw):\n    pass\n");
      }
      CommandResult r;
      r.started = true;
      r.exit_code = 0;
      if (auto it = m_answers.find(command + " " + name); it != m_answers.end()) return it->second;
      json doc = {{"command", command}};
      if (command == "check")
        doc["kernels"] = json::array({{{"kernel", "k"}, {"status", "passed"}}});
      if (command == "bench") {
        doc["variants"] = json::array({variant("k", "ok", 2e-6)});
        if (name == "problem") {  // an imported KernelBench problem: the baselines alone
          doc["variants"] = json::array({variant("torch eager (reference())", "ok", 8e-6),
                                         variant("torch.compile", "ok", 4e-6)});
        }
      }
      if (command == "tune")
        doc["champion"] = {{"point", {{"BLOCK", 256}}}, {"summary", {{"median", 1e-6}}}};
      r.out = doc.dump();
      return r;
    };
  }

  // kopt --json [--backend B] COMMAND ...
  static std::size_t command_at(const std::vector<std::string>& argv) {
    return argv.at(2) == "--backend" ? 4 : 2;
  }

  std::vector<std::string> commands_of(const std::string& problem) {
    std::vector<std::string> out;
    for (const auto& c : m_calls)
      if (std::any_of(c.begin(), c.end(),
                      [&](auto& a) { return a.find(problem) != std::string::npos; })) {
        std::size_t at = command_at(c);
        out.push_back(c.at(at) == "tune" ? "tune " + c.at(at + 3) : c.at(at));
      }
    return out;
  }

  TempDir m_dir{"kopt-campaign-test"};
  CampaignOptions m_options;
  std::mutex m_mutex;
  std::vector<std::vector<std::string>> m_calls;
  std::vector<std::chrono::milliseconds> m_timeouts;
  std::map<std::string, CommandResult> m_answers;
};

TEST_F(CampaignTest, AFolderHoldsItsProblemDirectoriesAndKernelBenchFilesInOrder) {
  auto found = discover_problems(m_options.sources, m_options.out, {});
  ASSERT_TRUE(found) << found.error().to_string();
  std::vector<std::string> names;
  for (const auto& p : *found) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b_vec", "2_Relu", "10_Later", "a_red"}))
      << "KernelBench files in their numeric order, helper.py is no problem";
  EXPECT_TRUE((*found)[1].kernelbench);
  EXPECT_EQ((*found)[1].dir, m_options.out / "problems" / "2_Relu" / "problem");

  // A candidates folder's 2_Relu/kopt.toml stands for 2_Relu.py.
  fs::path cands = m_dir.path() / "cands";
  ASSERT_TRUE(write_text_atomic(cands / "2_Relu" / "kopt.toml", spec("2_Relu", false)));
  found = discover_problems(m_options.sources, m_options.out, cands);
  ASSERT_TRUE(found);
  EXPECT_FALSE((*found)[1].kernelbench);
  EXPECT_EQ((*found)[1].dir, fs::absolute(cands / "2_Relu"));

  // Two problems of one name, a missing source, a folder with none: bad input naming them.
  ASSERT_TRUE(
      write_text_atomic(m_dir.path() / "other" / "b_vec" / "kopt.toml", spec("b_vec", false)));
  auto twice = discover_problems({m_options.sources[0], m_dir.path() / "other"}, m_options.out, {});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().kind, ErrorKind::bad_input);
  EXPECT_NE(twice.error().message.find("two problems named 'b_vec'"), std::string::npos);
  auto missing = discover_problems({m_dir.path() / "nope"}, m_options.out, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().to_string().find("nope"), std::string::npos);
  fs::create_directories(m_dir.path() / "empty");
  EXPECT_FALSE(discover_problems({m_dir.path() / "empty"}, m_options.out, {}));
}

TEST_F(CampaignTest, AModelNewAnswerIsTheCandidateOfItsKernelBenchFile) {
  // --candidates DIR/2_Relu.py defining ModelNew: its copy in the room runs with the KernelBench
  // file as its reference; no import (kopt infers the problem beside the copy).
  fs::path cands = m_dir.path() / "answers";
  std::string answer = std::string(k_kernelbench_file) + "class ModelNew(Model):\n    pass\n";
  ASSERT_TRUE(write_text_atomic(cands / "2_Relu.py", answer));
  ASSERT_TRUE(write_text_atomic(cands / "10_Later.py", "x = 1\n")) << "no ModelNew: no answer";
  m_options.candidates = cands;
  auto state = run_campaign(m_options, runner());
  ASSERT_TRUE(state) << state.error().to_string();
  EXPECT_EQ(commands_of("10_Later"), (std::vector<std::string>{"import", "check", "bench"}));
  fs::path copy = m_options.out / "problems" / "2_Relu" / "candidate" / "2_Relu.py";
  std::vector<std::vector<std::string>> relu;
  for (const auto& c : m_calls)
    if (std::find(c.begin(), c.end(), copy.string()) != c.end()) relu.push_back(c);
  ASSERT_EQ(relu.size(), 2u) << "check and bench of the answer";
  for (const auto& c : relu) {
    std::size_t at = command_at(c);
    EXPECT_EQ(c.at(at + 1), copy.string());
    EXPECT_EQ(c.at(at + 2), "--ref");
    EXPECT_EQ(c.at(at + 3), (m_dir.path() / "suite" / "kb" / "2_Relu.py").string());
  }
  EXPECT_EQ(*read_text_file(copy), answer);
  const CampaignProblem* p = nullptr;
  for (const auto& x : state->problems)
    if (x.name == "2_Relu") p = &x;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->modelnew, fs::absolute(cands / "2_Relu.py"));
  EXPECT_FALSE(p->kernelbench);

  // The answer changed: its steps again, nothing else.
  m_calls.clear();
  ASSERT_TRUE(write_text_atomic(cands / "2_Relu.py", answer + "# faster\n"));
  ASSERT_TRUE(run_campaign(m_options, runner()));
  EXPECT_EQ(m_calls.size(), 2u);
}

TEST_F(CampaignTest, ACampaignRefusedForBadInputWritesNothing) {
  m_options.sources = {m_dir.path() / "nope"};
  auto state = run_campaign(m_options, runner());
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().kind, ErrorKind::bad_input);
  EXPECT_FALSE(fs::exists(m_options.out)) << "no campaign folder left behind";
  EXPECT_TRUE(m_calls.empty());
}

TEST_F(CampaignTest, PlansAreParsedAndBadOnesNamed) {
  auto p = parse_plan("check, tune");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->check && p->tune && !p->bench && !p->optimize);
  EXPECT_EQ(plan_text(*p), "check,tune");
  auto bad = parse_plan("check,profile");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'profile'"), std::string::npos);
  EXPECT_FALSE(parse_plan(" , "));
}

TEST_F(CampaignTest, EachProblemGetsItsStepsAndTheLeaderboardComesFromTheirRecords) {
  auto state = run_campaign(m_options, runner());
  ASSERT_TRUE(state) << state.error().to_string();
  EXPECT_EQ(state->exit_code(), 0);
  EXPECT_EQ(commands_of("b_vec"), (std::vector<std::string>{"check", "bench", "tune k"}));
  EXPECT_EQ(commands_of("2_Relu"), (std::vector<std::string>{"import", "check", "bench"}))
      << "an imported problem has no kernel, so no tune";
  for (const auto& c : m_calls) {
    bool relu_bench = c.at(command_at(c)) == "bench" &&
                      c.at(command_at(c) + 1).find("2_Relu") != std::string::npos;
    if (relu_bench) {
      EXPECT_NE(std::find(c.begin(), c.end(), "--vs-torch"), c.end()) << "a Python reference";
    }
  }
  for (const auto& t : m_timeouts) EXPECT_LE(t.count(), 1800 * 1000);

  auto board = make_leaderboard(*state, m_options.out);
  ASSERT_EQ(board.rows.size(), 4u);
  const LeaderboardRow& vec = board.rows[0];
  EXPECT_EQ(vec.problem, "b_vec");
  EXPECT_EQ(vec.status, RowStatus::passed) << "no eager time: a C++ reference";
  EXPECT_EQ(vec.best_from, "tune") << "tune's champion (1 us) beat bench's (2 us)";
  EXPECT_EQ(vec.best, "k BLOCK=256");
  ASSERT_TRUE(vec.pct_sol);
  EXPECT_DOUBLE_EQ(*vec.pct_sol, 100.0);
  EXPECT_EQ(vec.bound, "memory");
  EXPECT_FALSE(vec.notes.empty()) << "why there is no speedup";
  const LeaderboardRow& relu = board.rows[1];
  EXPECT_EQ(relu.status, RowStatus::baseline);
  ASSERT_TRUE(relu.eager_s && relu.compile_s);
  EXPECT_FALSE(relu.time_s);
  // fast_p over all four rows: two are correct (b_vec, a_red), none timed against eager.
  ASSERT_EQ(board.fast_p.size(), 4u);
  EXPECT_DOUBLE_EQ(board.fast_p[0].over_eager, 0.5);
  EXPECT_DOUBLE_EQ(board.fast_p[1].over_eager, 0.0);
  EXPECT_TRUE(fs::exists(m_options.out / "leaderboard.md"));
  EXPECT_TRUE(fs::exists(m_options.out / "leaderboard.html"));
  auto j = json::parse(*read_text_file(m_options.out / "leaderboard.json"));
  EXPECT_EQ(j["rows"].size(), 4u);

  // Again: nothing to do.
  m_calls.clear();
  ASSERT_TRUE(run_campaign(m_options, runner()));
  EXPECT_TRUE(m_calls.empty()) << m_calls.size() << " steps ran again";

  // A problem's file changed: that problem's steps again, the others kept.
  ASSERT_TRUE(write_text_atomic(m_dir.path() / "suite" / "b_vec" / "k.cu", "// faster\n"));
  ASSERT_TRUE(run_campaign(m_options, runner()));
  EXPECT_EQ(commands_of("b_vec"), (std::vector<std::string>{"check", "bench", "tune k"}));
  EXPECT_EQ(m_calls.size(), 3u);
}

// A problem imported by an earlier kopt (its kopt.toml without this kopt's format stamp) is
// imported again and its steps run again; the others keep their records.
TEST_F(CampaignTest, AnImportAnEarlierKoptWroteIsImportedAgain) {
  ASSERT_TRUE(run_campaign(m_options, runner()));
  m_calls.clear();
  ASSERT_TRUE(run_campaign(m_options, runner()));
  EXPECT_TRUE(m_calls.empty()) << "nothing left to do";
  fs::path relu = problem_room(m_options.out, "2_Relu") / "problem" / "kopt.toml";
  ASSERT_TRUE(fs::exists(relu)) << relu;
  ASSERT_TRUE(write_text_atomic(relu, spec("2_Relu", true)));  // an earlier kopt's import
  auto again = run_campaign(m_options, runner());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(commands_of("2_Relu"), (std::vector<std::string>{"import", "check", "bench"}));
  EXPECT_TRUE(commands_of("10_Later").empty()) << "its import is current";
  EXPECT_EQ(again->exit_code(), 0);
}

TEST_F(CampaignTest, WhatTheMachineFailsIsTriedAgainAloneAndNeverAVerdict) {
  CommandResult oom;
  oom.started = true;
  oom.exit_code = 3;
  oom.out = json{{"error", "out of memory in kopt's own worker"}}.dump();
  m_answers["bench b_vec"] = oom;
  auto state = run_campaign(m_options, runner());
  ASSERT_TRUE(state);
  EXPECT_EQ(commands_of("b_vec"), (std::vector<std::string>{"check", "bench", "tune k", "bench"}))
      << "tried once more at the end";
  EXPECT_EQ(state->exit_code(), 1);
  auto board = make_leaderboard(*state, m_options.out);
  EXPECT_EQ(board.rows[0].status, RowStatus::passed) << "tune's champion still timed it";
  EXPECT_NE(board.rows[0].stopped.find("out of memory"), std::string::npos)
      << board.rows[0].stopped;
  ASSERT_TRUE(board.failures.count("environment")) << to_json(board).dump(1);

  // Resumed with the machine well again: only that step runs.
  m_answers.clear();
  m_calls.clear();
  state = run_campaign(m_options, runner());
  ASSERT_TRUE(state);
  EXPECT_EQ(commands_of("b_vec"), (std::vector<std::string>{"bench"}));
  EXPECT_EQ(m_calls.size(), 1u);
  EXPECT_EQ(state->exit_code(), 0);
}

TEST_F(CampaignTest, AStepKilledAtTheBudgetStopsTheProblemAndSaysSo) {
  CommandResult slow;
  slow.started = true;
  slow.timed_out = true;
  m_answers["check b_vec"] = slow;
  m_options.sources = {m_dir.path() / "suite" / "b_vec"};
  auto state = run_campaign(m_options, runner());
  ASSERT_TRUE(state);
  const auto& steps = state->problems.at(0).steps;
  EXPECT_EQ(steps.at(0).status, StepStatus::budget);
  EXPECT_EQ(m_timeouts.at(0).count(), 100 * 1000)
      << "the whole budget is the first step's deadline";
  auto board = make_leaderboard(*state, m_options.out);
  EXPECT_NE(board.rows.at(0).stopped.find("budget"), std::string::npos);
}

// A row whose problem folder is not there yet says which step has not run (a KernelBench file
// not imported, a ModelNew answer not checked), not the loader's "no such problem directory".
TEST_F(CampaignTest, APendingProblemSaysWhichStepHasNotRun) {
  CampaignState state;
  CampaignProblem kb;
  kb.name = "19_ReLU";
  kb.dir = m_dir.path() / "camp" / "problems" / "19_ReLU" / "problem";
  kb.kernelbench = true;
  kb.steps = {StepRecord{.kind = StepKind::import}, StepRecord{.kind = StepKind::check}};
  CampaignProblem answer = kb;
  answer.name = "20_LeakyReLU";
  answer.dir = m_dir.path() / "camp" / "problems" / "20_LeakyReLU" / "candidate" / "kopt-x";
  answer.kernelbench = false;
  answer.steps = {StepRecord{.kind = StepKind::check}, StepRecord{.kind = StepKind::bench}};
  CampaignProblem gone = answer;  // checked, and still no folder: the loader's reason stands
  gone.name = "21_Sigmoid";
  gone.steps[0].status = StepStatus::done;
  state.problems = {kb, answer, gone};
  auto board = make_leaderboard(state, m_dir.path() / "camp");
  ASSERT_EQ(board.rows.size(), 3u);
  auto notes = [&](std::size_t i) {
    return fmt::format("{}", fmt::join(board.rows[i].notes, "; "));
  };
  EXPECT_NE(notes(0).find("its import step has not run yet"), std::string::npos) << notes(0);
  EXPECT_NE(notes(1).find("its check step has not run yet"), std::string::npos) << notes(1);
  EXPECT_NE(notes(2).find("no such problem directory"), std::string::npos) << notes(2);
}

TEST_F(CampaignTest, FailedCandidatesAreGroupedByCause) {
  CommandResult failed;
  failed.started = true;
  failed.exit_code = 1;
  failed.out = json{{"kernels", json::array({{{"kernel", "k"}, {"status", "mismatch"}}})}}.dump();
  m_answers["check b_vec"] = failed;
  CommandResult bench;
  bench.started = true;
  bench.exit_code = 1;
  bench.out = json{{"variants", json::array({variant("k", "mismatch", 0)})}}.dump();
  m_answers["bench b_vec"] = bench;
  m_answers["tune b_vec"] = bench;
  m_options.sources = {m_dir.path() / "suite" / "b_vec"};
  auto state = run_campaign(m_options, runner());
  ASSERT_TRUE(state);
  auto board = make_leaderboard(*state, m_options.out);
  EXPECT_EQ(board.rows.at(0).status, RowStatus::failed);
  ASSERT_TRUE(board.failures.count("mismatch"));
  EXPECT_EQ(board.failures["mismatch"].size(), 1u) << "one kernel, said once";
  EXPECT_NE(leaderboard_markdown(board).find("**mismatch** (1)"), std::string::npos);
}

}  // namespace
}  // namespace kopt::campaign
