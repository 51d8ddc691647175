// `kopt mcp`: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line) whose
// tools are the command table's commands (mcp_tools.hpp). Each call runs its command in a child
// process from a thread of its own, so the server keeps reading while it runs: a call with a
// progress token gets `notifications/progress` about every second, each with the command's
// last log line; `notifications/cancelled` stops the call's command (its process group, SIGTERM
// and then SIGKILL; a run killed at any moment resumes) and the call gets no answer, as the
// protocol asks. Malformed messages get JSON-RPC errors and the server keeps serving; at the
// end of its input it stops what still runs and waits for it.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <variant>

#include "commands.hpp"
#include "kopt/core/process.hpp"
#include "kopt/core/suggest.hpp"
#include "mcp_tools.hpp"

namespace kopt::cli {
namespace {
using nlohmann::json;

// The revisions of the protocol this server speaks (the initialize handshake's), oldest first.
constexpr const char* k_protocol_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                               "2025-11-25"};
// A call's command may run this long; a client that wants less cancels it.
constexpr auto k_call_limit = std::chrono::hours(24);
constexpr std::size_t k_progress_message_chars = 240;

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json rpc_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json initialize_result(const json& params) {
  std::string asked = params.is_object() ? params.value("protocolVersion", "") : "";
  auto known = std::find(std::begin(k_protocol_versions), std::end(k_protocol_versions), asked);
  std::string version =
      known != std::end(k_protocol_versions) ? asked : std::end(k_protocol_versions)[-1];
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "kopt"}, {"version", KOPT_VERSION}}},
          {"instructions",
           "Each tool runs the kopt command of its name (iter_open: `kopt iter open`) with "
           "--json and returns that document as structuredContent (docs/json/commands.json). "
           "Exit 1 is a verdict (a candidate failed), not a tool error. Long calls send "
           "progress when given a progress token and stop when cancelled; a stopped optimize "
           "resumes with resume=true."}};
}

class Session {
 public:
  void serve(std::istream& in);

 private:
  struct Call {
    std::atomic<bool> cancelled{false};
  };
  void send(const json& j);
  json handle(const json& msg);  // null: nothing to answer now
  json call_tool(const json& id, const json& params);
  void run_call(json id, std::string tool, std::vector<std::string> argv, json token,
                std::shared_ptr<Call> call);
  void cancel(const json& request_id);

  std::mutex m_out;
  std::mutex m_calls_mutex;
  std::condition_variable m_calls_done;
  std::map<std::string, std::shared_ptr<Call>> m_calls;  // by the request id, dumped
  int m_running = 0;                                     // threads of calls not yet ended
};

void Session::send(const json& j) {
  std::lock_guard lock(m_out);
  std::cout << j.dump() << "\n";
  std::cout.flush();
}

void Session::cancel(const json& request_id) {
  std::lock_guard lock(m_calls_mutex);
  if (auto it = m_calls.find(request_id.dump()); it != m_calls.end()) it->second->cancelled = true;
}

json Session::handle(const json& msg) {
  json id = msg.is_object() && msg.contains("id") ? msg["id"] : json(nullptr);
  if (!msg.is_object() || msg.value("jsonrpc", "") != "2.0" || !msg.contains("method") ||
      !msg["method"].is_string())
    return rpc_error(id, -32600, "invalid request: expected a JSON-RPC 2.0 object with a method");
  const std::string method = msg["method"];
  const json params = msg.value("params", json::object());
  if (method == "notifications/cancelled") {
    if (params.is_object() && params.contains("requestId")) cancel(params["requestId"]);
    return nullptr;
  }
  if (!msg.contains("id")) return nullptr;  // another notification: nothing to answer
  if (method == "initialize") return rpc_result(id, initialize_result(params));
  if (method == "ping") return rpc_result(id, json::object());
  if (method == "tools/list") return rpc_result(id, {{"tools", mcp::tool_list()}});
  if (method == "tools/call") return call_tool(id, params);
  return rpc_error(id, -32601, "method not found: " + method);
}

json Session::call_tool(const json& id, const json& params) {
  if (!params.is_object()) return rpc_error(id, -32602, "params must be an object");
  const std::string name = params.value("name", "");
  const Command* tool = mcp::find_tool(name);
  if (!tool)
    return rpc_error(id, -32602,
                     "unknown tool '" + name + "'" + did_you_mean(name, mcp::tool_names()));
  auto argv = mcp::command_line(*tool, params.value("arguments", json::object()));
  if (auto* why = std::get_if<std::string>(&argv))  // a tool error the agent reads and mends
    return rpc_result(id, mcp::text_result("kopt " + name + ": " + *why, true));
  json token = params.contains("_meta") && params["_meta"].is_object()
                   ? params["_meta"].value("progressToken", json(nullptr))
                   : json(nullptr);
  auto call = std::make_shared<Call>();
  {
    std::lock_guard lock(m_calls_mutex);
    if (!m_calls.emplace(id.dump(), call).second)
      return rpc_error(id, -32600, "request id " + id.dump() + " is already in use by a call");
    ++m_running;
  }
  std::thread(&Session::run_call, this, id, name, std::move(std::get<0>(argv)), token, call)
      .detach();
  return nullptr;  // answered by run_call
}

void Session::run_call(json id, std::string tool, std::vector<std::string> argv, json token,
                       std::shared_ptr<Call> call) {
  double progress = 0;
  RunWatch watch;
  watch.stop = [&] { return call->cancelled.load(); };
  if (!token.is_null())
    watch.on_tick = [&](const std::string& line) {
      if (call->cancelled) return;
      std::string message = line.empty() ? "running " + tool : line;
      if (message.size() > k_progress_message_chars)
        message = message.substr(0, k_progress_message_chars) + "…";
      send(
          {{"jsonrpc", "2.0"},
           {"method", "notifications/progress"},
           {"params", {{"progressToken", token}, {"progress", ++progress}, {"message", message}}}});
    };
  json answer;
  try {
    CommandResult r = run_watched(argv, k_call_limit, watch);
    if (!r.stopped) answer = rpc_result(id, mcp::tool_result(tool, r));
  } catch (const std::exception& e) {
    answer = rpc_error(id, -32603, std::string("internal error: ") + e.what());
  }
  {
    // The id is free again before the answer reaches the client, who may reuse it at once.
    std::lock_guard lock(m_calls_mutex);
    m_calls.erase(id.dump());
  }
  if (!answer.is_null() && !call->cancelled) send(answer);
  std::lock_guard lock(m_calls_mutex);
  --m_running;
  m_calls_done.notify_all();
}

void Session::serve(std::istream& in) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json msg;
    try {
      msg = json::parse(line);
    } catch (const json::parse_error& e) {
      send(rpc_error(nullptr, -32700, std::string("parse error: ") + e.what()));
      continue;
    }
    json reply;
    try {
      reply = handle(msg);
    } catch (const std::exception& e) {
      reply = rpc_error(msg.is_object() && msg.contains("id") ? msg["id"] : json(nullptr), -32603,
                        std::string("internal error: ") + e.what());
    }
    if (!reply.is_null()) send(reply);
  }
  // The client is gone: stop what still runs, and wait for it to end.
  std::unique_lock lock(m_calls_mutex);
  for (auto& [id, call] : m_calls) call->cancelled = true;
  m_calls_done.wait(lock, [&] { return m_running == 0; });
}

}  // namespace

int run_mcp_command() {
  (void)mcp::tool_list();  // the table and the schemas, before the first message
  Session session;
  session.serve(std::cin);
  return 0;
}

std::vector<Command> mcp_commands(const GlobalRef&) {
  Command c{.path = {"mcp"},
            .help =
                "a Model Context Protocol server on stdio (JSON-RPC 2.0) for coding agents: "
                "every command a tool, with progress and cancellation",
            .run = [] { return run_mcp_command(); },
            .tool = false};
  return {c};
}

}  // namespace kopt::cli
