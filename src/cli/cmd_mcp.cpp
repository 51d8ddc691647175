// `kopt mcp`: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line).
// Each tool runs the matching kopt command with --json in a child process and returns what
// it printed, so tools and CLI can never disagree. Malformed messages get JSON-RPC errors
// and the server keeps serving.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "commands.hpp"
#include "kopt/core/process.hpp"
#include "kopt/core/suggest.hpp"

namespace kopt::cli {
namespace {
using nlohmann::json;

// The tools: every command of the table an agent may call, each option an argument, and the
// device family (--backend) too. The table is built once, bound to storage the server never
// reads: a call runs the command in a child process.
struct Tools {
  std::shared_ptr<GlobalOptions> g = std::make_shared<GlobalOptions>();
  std::vector<Command> commands = command_table(g);
  std::vector<Option> globals = global_options(*g);
  const Option& backend() const { return globals.back(); }
};

const Tools& tools() {
  static const Tools t;
  return t;
}

const Command* find_tool(const std::string& name) {
  for (const auto& c : tools().commands)
    if (!c.internal && c.tool && c.tool_name() == name) return &c;
  return nullptr;
}

json schema_of(const Command& c) {
  json s = tool_schema(c);
  const Option& b = tools().backend();
  s["inputSchema"]["properties"][b.argument_name()] = {
      {"type", "string"}, {"description", b.help}, {"enum", b.choices}, {"default", "auto"}};
  return s;
}

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

// The kopt command line for a call, or an error message for bad arguments.
std::variant<std::vector<std::string>, std::string> command_for(const Command& c,
                                                                const json& args) {
  std::vector<std::string> argv = {self_executable().string()};
  argv.insert(argv.end(), c.path.begin(), c.path.end());
  if (!args.is_object()) return std::string("arguments must be an object");
  std::vector<const Option*> options;
  for (const auto& o : c.options) options.push_back(&o);
  options.push_back(&tools().backend());
  std::vector<std::string> names;
  for (const Option* o : options) names.push_back(o->argument_name());
  for (auto it = args.begin(); it != args.end(); ++it)
    if (std::find(names.begin(), names.end(), it.key()) == names.end())
      return "unknown argument '" + it.key() + "'" + did_you_mean(it.key(), names);
  std::vector<std::string> positionals;
  for (const Option* o : options) {
    const std::string name = o->argument_name();
    if (!args.contains(name)) {
      if (o->required) return "missing required argument '" + name + "'";
      continue;
    }
    const json& v = args[name];
    const std::string type = o->schema_type();
    bool ok =
        (type == "string" && v.is_string()) || (type == "integer" && v.is_number_integer()) ||
        (type == "number" && v.is_number()) || (type == "boolean" && v.is_boolean()) ||
        (type == "array" && v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) {
           return x.is_string() || x.is_number_integer();
         }));
    if (!ok) return "argument '" + name + "' must be of type " + type;
    auto text = [](const json& x) { return x.is_string() ? x.get<std::string>() : x.dump(); };
    if (type == "string" && !o->choices.empty() &&
        std::find(o->choices.begin(), o->choices.end(), v.get<std::string>()) == o->choices.end())
      return "argument '" + name +
             "' must be one of: " + fmt::format("{}", fmt::join(o->choices, ", "));
    const std::string flag = o->long_name();
    if (o->positional()) {
      if (v.is_array())
        for (const auto& x : v) positionals.push_back(text(x));
      else
        positionals.push_back(text(v));
    } else if (type == "boolean") {
      if (v.get<bool>()) argv.push_back(flag);
    } else if (type == "array") {
      for (const auto& x : v) {
        argv.push_back(flag);
        argv.push_back(text(x));
      }
    } else {
      argv.push_back(flag);
      argv.push_back(text(v));
    }
  }
  argv.insert(argv.end(), positionals.begin(), positionals.end());
  argv.push_back("--json");
  return argv;
}

void send(const json& j) {
  std::cout << j.dump() << "\n";
  std::cout.flush();
}

json handle(const json& msg) {
  json id = msg.contains("id") ? msg["id"] : json(nullptr);
  if (!msg.is_object() || msg.value("jsonrpc", "") != "2.0" || !msg.contains("method") ||
      !msg["method"].is_string())
    return rpc_error(id, -32600, "invalid request: expected a JSON-RPC 2.0 object with a method");
  std::string method = msg["method"];
  const json params = msg.value("params", json::object());
  bool notification = !msg.contains("id");
  if (method == "initialize")
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"result",
             {{"protocolVersion", params.value("protocolVersion", "2025-06-18")},
              {"capabilities", {{"tools", {{"listChanged", false}}}}},
              {"serverInfo", {{"name", "kopt"}, {"version", KOPT_VERSION}}}}}};
  if (method.rfind("notifications/", 0) == 0 || notification) return nullptr;  // nothing to answer
  if (method == "ping") return {{"jsonrpc", "2.0"}, {"id", id}, {"result", json::object()}};
  if (method == "tools/list") {
    json list = json::array();
    for (const auto& c : tools().commands)
      if (!c.internal && c.tool) list.push_back(schema_of(c));
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", {{"tools", list}}}};
  }
  if (method == "tools/call") {
    std::string name = params.value("name", "");
    const Command* t = find_tool(name);
    if (!t) {
      std::vector<std::string> known;
      for (const auto& c : tools().commands)
        if (!c.internal && c.tool) known.push_back(c.tool_name());
      return rpc_error(id, -32602, "unknown tool '" + name + "'" + did_you_mean(name, known));
    }
    auto cmd = command_for(*t, params.value("arguments", json::object()));
    if (auto* why = std::get_if<std::string>(&cmd)) return rpc_error(id, -32602, *why);
    json token = params.contains("_meta") ? params["_meta"].value("progressToken", json(nullptr))
                                          : json(nullptr);
    if (t->long_running && !token.is_null())
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params",
             {{"progressToken", token},
              {"progress", 0},
              {"total", 1},
              {"message", std::string("running ") + name}}}});
    SystemCommandRunner runner;
    CommandResult r = runner.run(std::get<std::vector<std::string>>(cmd), std::chrono::minutes(30));
    if (t->long_running && !token.is_null())
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params",
             {{"progressToken", token},
              {"progress", 1},
              {"total", 1},
              {"message", std::string("done ") + name}}}});
    std::string text = r.out.empty() ? r.err : r.out;
    return {
        {"jsonrpc", "2.0"},
        {"id", id},
        {"result",
         {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", !r.ok()}}}};
  }
  return rpc_error(id, -32601, "method not found: " + method);
}

}  // namespace

int run_mcp_command() {
  (void)tools();  // the table, before the first message
  std::string line;
  while (std::getline(std::cin, line)) {
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
  return 0;
}

std::vector<Command> mcp_commands(const GlobalRef&) {
  Command c{.path = {"mcp"},
            .help = "a Model Context Protocol server on stdio (JSON-RPC 2.0) for coding agents",
            .run = [] { return run_mcp_command(); },
            .tool = false};
  return {c};
}

}  // namespace kopt::cli
