// A real MCP client session over the server's stdio: initialize, tools/list, tools/call,
// progress notifications, and protocol errors after which the server keeps serving.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
using nlohmann::json;
using namespace std::chrono_literals;

class Mcp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::kopt_binary())) GTEST_SKIP() << "kopt binary not built";
    auto p = Subprocess::spawn({test::kopt_binary().string(), "mcp"}, m_dir.path() / "mcp.err");
    ASSERT_TRUE(p) << p.error().to_string();
    m_server = std::move(*p);
  }
  json read() {
    std::string line;
    EXPECT_EQ(m_server.read_line(line, 120s), Subprocess::ReadStatus::line);
    return json::parse(line);
  }
  json call(const json& msg) {
    EXPECT_TRUE(m_server.write_line(msg.dump()));
    return read();
  }
  TempDir m_dir{"kopt-mcp"};
  Subprocess m_server;
};

TEST_F(Mcp, ASessionListsAndCallsTools) {
  json init = call({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-06-18"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}});
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "kopt");
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  ASSERT_TRUE(m_server.write_line(
      json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump()));
  json list = call({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  std::set<std::string> names;
  for (const auto& t : list["result"]["tools"]) {
    names.insert(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
  }
  for (const char* n :
       {"env", "check", "bench", "profile", "analyze", "sass", "iter_open", "iter_branch",
        "iter_close", "iter_finalize", "experience_recommend", "experience_add", "report"})
    EXPECT_TRUE(names.contains(n)) << n;
  json analyzed = call(
      {{"jsonrpc", "2.0"},
       {"id", 3},
       {"method", "tools/call"},
       {"params",
        {{"name", "analyze"},
         {"arguments",
          {{"file",
            (test::source_dir() / "tests/fixtures/ncu/h100/transpose_naive.csv").string()}}}}}});
  ASSERT_FALSE(analyzed["result"]["isError"].get<bool>()) << analyzed.dump();
  json body = json::parse(analyzed["result"]["content"][0]["text"].get<std::string>());
  EXPECT_EQ(body["analysis"]["bottleneck"]["class"], "memory-bound");  // the CLI's own --json
}

TEST_F(Mcp, ProgressNotificationsForLongTools) {
  ASSERT_TRUE(m_server.write_line(json{
      {"jsonrpc", "2.0"},
      {"id", 7},
      {"method", "tools/call"},
      {"params",
       {{"name", "check"},
        {"arguments", {{"problem", (test::source_dir() / "examples/softmax").string()}}},
        {"_meta",
         {{"progressToken", "t1"}}}}}}.dump()));
  json first = read();
  EXPECT_EQ(first["method"], "notifications/progress");
  EXPECT_EQ(first["params"]["progressToken"], "t1");
  json second = read();
  EXPECT_EQ(second["method"], "notifications/progress");
  json result = read();
  EXPECT_EQ(result["id"], 7);
  EXPECT_TRUE(
      result["result"].contains("isError"));  // without a GPU, check reports an error, as JSON
}

TEST_F(Mcp, ProtocolErrorsAndTheServerKeepsServing) {
  ASSERT_TRUE(m_server.write_line("{not json"));
  EXPECT_EQ(read()["error"]["code"], -32700);
  EXPECT_EQ(call({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/frobnicate"}})["error"]["code"],
            -32601);
  EXPECT_EQ(call({{"id", 2}, {"method", "ping"}})["error"]["code"], -32600);  // no "jsonrpc"
  json unknown = call({{"jsonrpc", "2.0"},
                       {"id", 3},
                       {"method", "tools/call"},
                       {"params", {{"name", "teleport"}}}});
  EXPECT_EQ(unknown["error"]["code"], -32602);
  json wrong = call({{"jsonrpc", "2.0"},
                     {"id", 4},
                     {"method", "tools/call"},
                     {"params", {{"name", "analyze"}, {"arguments", {{"file", 42}}}}}});
  EXPECT_EQ(wrong["error"]["code"], -32602);
  EXPECT_NE(wrong["error"]["message"].get<std::string>().find("type string"), std::string::npos);
  json extra = call({{"jsonrpc", "2.0"},
                     {"id", 5},
                     {"method", "tools/call"},
                     {"params", {{"name", "env"}, {"arguments", {{"colour", "red"}}}}}});
  EXPECT_EQ(extra["error"]["code"], -32602);
  EXPECT_EQ(call({{"jsonrpc", "2.0"}, {"id", 6}, {"method", "ping"}})["result"],
            json::object());  // still serving
}

}  // namespace
}  // namespace kopt
