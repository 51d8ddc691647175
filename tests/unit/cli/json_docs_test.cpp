// The --json documents of the commands that run without a GPU have exactly the top-level
// fields docs/json/commands.json lists.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_fixture.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
using nlohmann::json;

class JsonDocs : public test::CliFixture {
 protected:
  std::set<std::string> documented(const std::string& command) {
    auto text = read_text_file(test::source_dir() / "docs/json/commands.json");
    EXPECT_TRUE(text);
    json all = json::parse(*text);
    std::set<std::string> keys;
    const json& fields = all.at(command).at("fields");
    for (auto it = fields.begin(); it != fields.end(); ++it) keys.insert(it.key());
    return keys;
  }
  std::set<std::string> printed(std::vector<std::string> args) {
    args.push_back("--json");
    CommandResult r = test::run_kopt(args);
    std::set<std::string> keys;
    json doc = json::parse(r.out);
    for (auto it = doc.begin(); it != doc.end(); ++it) keys.insert(it.key());
    return keys;
  }
  std::string src(const char* rel) { return (test::source_dir() / rel).string(); }
};

TEST_F(JsonDocs, CommandsWithoutAGpuMatchTheirDocumentedFields) {
  ::setenv("KOPT_EXPERIENCE_DB", (m_cache.path() / "e.db").c_str(), 1);
  EXPECT_EQ(printed({"env", "--no-ncu-probe"}), documented("env"));
  EXPECT_EQ(printed({"analyze", src("tests/fixtures/ncu/h100/transpose_naive.csv")}),
            documented("analyze"));
  EXPECT_EQ(printed({"target", src("examples/gemm_f32"), "--gpu", "h100-sxm", "--out",
                     (m_cache.path() / "t.md").string()}),
            documented("target"));
  auto specs = printed({"specs"});
  EXPECT_TRUE(specs.contains("gpus") && documented("specs").contains("gpus"));
  EXPECT_EQ(printed({"experience", "recommend", "--family", "x"}),
            documented("experience recommend"));
  EXPECT_EQ(printed({"experience", "list"}), documented("experience list"));
  EXPECT_EQ(printed({"experience", "stats"}), documented("experience stats"));
  // Every experience action: each is an MCP tool whose output schema is its entry.
  const std::string other = (m_cache.path() / "other.db").string();
  EXPECT_EQ(printed({"experience", "add", "--family", "f", "--chip", "sm_90", "--method", "m",
                     "--before", "2", "--after", "1"}),
            documented("experience add"));
  EXPECT_EQ(printed({"experience", "add", "--db", other, "--family", "g", "--chip", "sm_90",
                     "--method", "m", "--before", "2", "--after", "1"}),
            documented("experience add"));
  EXPECT_EQ(printed({"experience", "merge", other}), documented("experience merge"));
  EXPECT_EQ(printed({"experience", "search", "m"}), documented("experience search"));
  EXPECT_EQ(printed({"experience", "predictions"}), documented("experience predictions"));
  EXPECT_EQ(printed({"experience", "pitfalls", "--family", "f"}),
            documented("experience pitfalls"));
  EXPECT_EQ(printed({"experience", "playbook", "--playbooks", m_cache.path().string()}),
            documented("experience playbook"));
  auto exported = printed({"experience", "sync", "export", (m_cache.path() / "e.jsonl").string()});
  EXPECT_TRUE(exported.contains("exported") && documented("experience sync").contains("exported"));
  auto error = printed({"specs", "voodoo2"});
  EXPECT_EQ(error, documented("error"));
  ::unsetenv("KOPT_EXPERIENCE_DB");
}

}  // namespace
}  // namespace kopt
