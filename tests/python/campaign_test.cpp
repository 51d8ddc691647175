// `kopt campaign` through the CLI with a real torch on the OpenCL device (label python; PoCL in
// CI): a small suite — a problem with a C++ reference, a KernelBench problem with its candidate
// kernels, a bare KernelBench file imported and timed as a baseline — killed in the middle,
// another source added while it runs, and resumed: what finished is not run again, and the
// leaderboard holds every problem.
#include <gtest/gtest.h>
#include <signal.h>

#include <set>
#include <thread>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class CampaignCli : public test::PrivateCacheTest {
 protected:
  // An example problem copied with its dims made small (`from` -> `to`, text replaced).
  fs::path copy_problem(const std::string& example, const fs::path& to,
                        const std::vector<std::pair<std::string, std::string>>& edits) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(test::source_dir() / "examples" / example))
      if (e.is_regular_file()) fs::copy_file(e.path(), to / e.path().filename());
    auto toml = read_text_file(to / "kopt.toml");
    EXPECT_TRUE(toml);
    for (const auto& [from, with] : edits) {
      auto at = toml->find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) toml->replace(at, from.size(), with);
    }
    EXPECT_TRUE(write_text_atomic(to / "kopt.toml", *toml));
    return to;
  }

  std::optional<json> state() {
    auto text = read_text_file(m_dir.path() / "camp" / "campaign.json");
    if (!text) return std::nullopt;
    try {
      return json::parse(*text);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  std::vector<std::string> args(std::vector<std::string> more) {
    std::vector<std::string> a{"--backend", "opencl", "campaign"};
    a.insert(a.end(), more.begin(), more.end());
    for (const char* x : {"--out", "", "--budget", "120", "--evals", "3", "--max-time", "0.2"})
      a.push_back(std::string(x).empty() ? (m_dir.path() / "camp").string() : x);
    return a;
  }
};

TEST_F(CampaignCli, ASmallCampaignKilledInTheMiddleResumesWithoutRedoingFinishedWork) {
  KOPT_SKIP_WITHOUT_TORCH();
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path suite = m_dir.path() / "suite";
  copy_problem("vector_add", suite / "vector_add",
               {{"n = 16777216", "n = 65536"}, {"n = 1048580", "n = 4100"}});
  ASSERT_TRUE(write_text_atomic(
      suite / "kb" / "5_TinyRelu.py",
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
      "        super().__init__()\n\n    def forward(self, x):\n        return torch.relu(x)\n\n"
      "def get_inputs():\n    return [torch.randn(16, 256)]\n\ndef get_init_inputs():\n"
      "    return []\n"));
  fs::path later = m_dir.path() / "later";
  copy_problem("kernelbench/19_ReLU", later / "19_ReLU",
               {{"batch_size = 4096", "batch_size = 16"}, {"dim = 8192", "dim = 1024"}});

  // Started, then killed once its first step has finished.
  std::vector<std::string> argv{test::kopt_binary().string()};
  for (auto& a : args({suite.string()})) argv.push_back(a);
  auto child = Subprocess::spawn(argv, m_dir.path() / "first.log");
  ASSERT_TRUE(child) << child.error().to_string();
  std::map<std::string, int> done_at_kill;
  bool added = false;
  for (int i = 0; i < 3000 && child->running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto s = state();
    if (!s) continue;
    for (const auto& p : (*s)["problems"])
      for (const auto& st : p["steps"])
        if (st["status"] == "done")
          done_at_kill[p["name"].get<std::string>() + "/" + st["record"].get<std::string>()] =
              st["attempts"].get<int>();
    if (done_at_kill.empty()) continue;
    // While it runs: another source joins it instead of starting a second campaign.
    int rc = -1;
    auto add = test::kopt_json(args({later.string()}), rc);
    EXPECT_EQ(rc, 0) << add.dump(2);
    added = add.value("added_to_running", false);
    break;
  }
  ASSERT_FALSE(done_at_kill.empty())
      << "no step finished; log: " << read_text_file(m_dir.path() / "first.log").value_or("");
  EXPECT_TRUE(added) << "the running campaign held its folder";
  child->kill_and_reap();
  auto killed = state();
  ASSERT_TRUE(killed);
  std::size_t unfinished = 0;
  for (const auto& p : (*killed)["problems"])
    for (const auto& st : p["steps"]) unfinished += st["status"] != "done";
  EXPECT_GT(unfinished, 0u) << "killed in the middle";

  // Resumed: no source named, the campaign's own (and the one added) are taken.
  int rc = -1;
  auto resumed = test::kopt_json(args({}), rc);
  ASSERT_EQ(rc, 0) << resumed.dump(2) << read_text_file(m_dir.path() / "first.log").value_or("");
  std::set<std::string> names;
  for (const auto& p : resumed["problems"]) {
    names.insert(p["name"].get<std::string>());
    for (const auto& st : p["steps"]) {
      EXPECT_TRUE(st["status"] == "done" || st["status"] == "skipped") << p.dump(2);
      std::string key = p["name"].get<std::string>() + "/" + st["record"].get<std::string>();
      if (done_at_kill.count(key)) {
        EXPECT_EQ(st["attempts"].get<int>(), done_at_kill[key]) << key << " ran again";
      }
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"vector_add", "5_TinyRelu", "19_ReLU"}));

  std::set<std::string> keys, documented;
  for (auto it = resumed.begin(); it != resumed.end(); ++it) keys.insert(it.key());
  auto docs =
      nlohmann::json::parse(*read_text_file(test::source_dir() / "docs/json/commands.json"));
  for (auto it = docs["campaign"]["fields"].begin(); it != docs["campaign"]["fields"].end(); ++it)
    documented.insert(it.key());
  EXPECT_EQ(keys, documented) << "docs/json/commands.json documents campaign's fields";

  auto board = resumed["leaderboard"];
  std::map<std::string, json> rows;
  for (const auto& r : board["rows"]) rows[r["problem"].get<std::string>()] = r;
  ASSERT_EQ(rows.size(), 3u) << board.dump(2);
  EXPECT_EQ(rows["vector_add"]["status"], "passed") << "a C++ reference: no eager to compare";
  EXPECT_TRUE(rows["vector_add"]["pct_sol"].is_number());
  EXPECT_FALSE(rows["vector_add"]["notes"].empty()) << "says why there is no speedup";
  EXPECT_TRUE(rows["19_ReLU"]["speedup_eager"].is_number()) << rows["19_ReLU"].dump(2);
  EXPECT_EQ(rows["5_TinyRelu"]["status"], "baseline") << rows["5_TinyRelu"].dump(2);
  EXPECT_TRUE(rows["5_TinyRelu"]["eager_s"].is_number());
  ASSERT_EQ(board["fast_p"].size(), 4u);
  EXPECT_NEAR(board["fast_p"][0]["over_eager"].get<double>(), 2.0 / 3.0, 1e-9);
  for (const char* f : {"leaderboard.md", "leaderboard.html", "leaderboard.json"})
    EXPECT_TRUE(fs::exists(m_dir.path() / "camp" / f)) << f;

  // The leaderboard again from the records alone.
  auto report =
      test::kopt_json({"campaign", "--report", "--out", (m_dir.path() / "camp").string()}, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(report["leaderboard"]["rows"].size(), 3u);
}

}  // namespace
}  // namespace kopt
