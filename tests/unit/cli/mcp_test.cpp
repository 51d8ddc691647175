// A real MCP client session over the server's stdio: initialize, tools/list with output
// schemas, tools/call with structured results, progress while a call runs, cancellation, and
// protocol errors after which the server keeps serving. (tests/mcp/sdk_session_test.py drives
// it with the official MCP Python SDK.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command_table.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
using nlohmann::json;
using namespace std::chrono_literals;

// Whether a process whose command line holds `text` runs.
bool running_with(const std::string& text) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = read_text_file(e.path() / "cmdline");
    if (cmdline && cmdline->find(text) != std::string::npos) return true;
  }
  return false;
}

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
  EXPECT_EQ(analyzed["result"]["structuredContent"], body);
  EXPECT_EQ(analyzed["result"]["_meta"]["kopt/exit_code"], 0);
  // A failed command's error document is structured too, and a tool error.
  json failed = call({{"jsonrpc", "2.0"},
                      {"id", 4},
                      {"method", "tools/call"},
                      {"params", {{"name", "specs"}, {"arguments", {{"gpu", "voodoo2"}}}}}});
  EXPECT_TRUE(failed["result"]["isError"].get<bool>()) << failed.dump();
  EXPECT_EQ(failed["result"]["structuredContent"]["exit_code"], 2) << failed.dump();
  EXPECT_EQ(failed["result"]["_meta"]["kopt/exit_code"], 2);
}

// Every tool's output schema is its command's document in docs/json/commands.json, with the
// error document's fields: an agent knows what each call answers before it calls.
TEST_F(Mcp, EveryToolHasTheOutputSchemaOfItsDocument) {
  json list = call({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  ASSERT_TRUE(list.contains("result")) << list.dump();
  std::size_t tools = 0;
  for (const auto& t : list["result"]["tools"]) {
    ++tools;
    const json& out = t["outputSchema"];
    EXPECT_EQ(out["type"], "object") << t["name"];
    EXPECT_EQ(out["required"], json::array({"schema_version"})) << t["name"];
    for (const char* f : {"schema_version", "command", "error", "exit_code"})
      EXPECT_TRUE(out["properties"].contains(f)) << t["name"] << " " << f;
    EXPECT_GT(out["properties"].size(), 4u) << t["name"] << ": no field of its own";
    EXPECT_TRUE(t["inputSchema"]["properties"].contains("backend")) << t["name"];
  }
  std::size_t commands = 0;  // every command of the table but mcp itself and the internal ones
  for (const auto& c : cli::command_table(std::make_shared<cli::GlobalOptions>()))
    commands += !c.internal && c.tool;
  EXPECT_EQ(tools, commands);
  EXPECT_GE(tools, 30u);
  json iter_open;
  for (const auto& t : list["result"]["tools"])
    if (t["name"] == "iter_open") iter_open = t;
  EXPECT_TRUE(iter_open["outputSchema"]["properties"].contains("versions"))  // the run state
      << iter_open.dump();
}

// A call that runs until stopped, whatever the machine: importing experience from a FIFO no one
// writes to blocks in open(). The server keeps serving beside it, sends progress while it runs,
// and a cancel stops its process and silences the call.
TEST_F(Mcp, ACallSendsProgressWhileItRunsAndACancelStopsIt) {
  const auto fifo = m_dir.path() / "never-written.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_TRUE(m_server.write_line(json{{"jsonrpc", "2.0"},
                                       {"id", 7},
                                       {"method", "tools/call"},
                                       {"params",
                                        {{"name", "experience_sync"},
                                         {"arguments",
                                          {{"direction", "import"},
                                           {"file", fifo.string()},
                                           {"db", (m_dir.path() / "e.db").string()}}},
                                         {"_meta", {{"progressToken", "t1"}}}}}}
                                      .dump()));
  json first = read();  // about a second in
  EXPECT_EQ(first["method"], "notifications/progress");
  EXPECT_EQ(first["params"]["progressToken"], "t1");
  EXPECT_EQ(first["params"]["progress"], 1);
  EXPECT_EQ(first["params"]["message"], "running experience_sync");
  EXPECT_TRUE(running_with(fifo.string()));
  // Served while the call runs.
  ASSERT_TRUE(m_server.write_line(json{{"jsonrpc", "2.0"}, {"id", 8}, {"method", "ping"}}.dump()));
  json pong = read();
  while (pong.contains("method")) pong = read();  // progress of call 7 may come first
  EXPECT_EQ(pong["id"], 8);
  ASSERT_TRUE(m_server.write_line(json{{"jsonrpc", "2.0"},
                                       {"method", "notifications/cancelled"},
                                       {"params", {{"requestId", 7}, {"reason", "test"}}}}
                                      .dump()));
  auto t0 = std::chrono::steady_clock::now();
  while (running_with(fifo.string()) && std::chrono::steady_clock::now() - t0 < 10s)
    std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(running_with(fifo.string())) << "the cancelled command still runs";
  // No answer for the cancelled call, and nothing else of it: only the next ping's answer.
  ASSERT_TRUE(m_server.write_line(json{{"jsonrpc", "2.0"}, {"id", 9}, {"method", "ping"}}.dump()));
  std::string line;
  ASSERT_EQ(m_server.read_line(line, 10s), Subprocess::ReadStatus::line);
  while (json::parse(line).contains("method") &&
         json::parse(line)["method"] == "notifications/progress")  // sent before the cancel
    ASSERT_EQ(m_server.read_line(line, 10s), Subprocess::ReadStatus::line);
  EXPECT_EQ(json::parse(line)["id"], 9) << line;
  EXPECT_EQ(m_server.read_line(line, 2500ms), Subprocess::ReadStatus::timeout) << line;
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
  // Bad arguments are a tool error the agent reads and mends (MCP 2025-11-25), not a
  // protocol error.
  EXPECT_TRUE(wrong["result"]["isError"].get<bool>()) << wrong.dump();
  EXPECT_NE(wrong["result"]["content"][0]["text"].get<std::string>().find("type string"),
            std::string::npos);
  json extra = call({{"jsonrpc", "2.0"},
                     {"id", 5},
                     {"method", "tools/call"},
                     {"params", {{"name", "env"}, {"arguments", {{"colour", "red"}}}}}});
  EXPECT_TRUE(extra["result"]["isError"].get<bool>()) << extra.dump();
  EXPECT_NE(extra["result"]["content"][0]["text"].get<std::string>().find("colour"),
            std::string::npos);
  EXPECT_EQ(call({{"jsonrpc", "2.0"}, {"id", 6}, {"method", "ping"}})["result"],
            json::object());  // still serving
}

}  // namespace
}  // namespace kopt
