// `kopt mcp`: a Model Context Protocol server on stdio (JSON-RPC 2.0, one message a line).
// Each tool runs the matching kopt command with --json in a child process and returns what
// it printed, so tools and CLI can never disagree. Malformed messages get JSON-RPC errors
// and the server keeps serving.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "commands.hpp"
#include "kopt/core/process.hpp"

namespace kopt::cli {
namespace {
using nlohmann::json;

struct Arg {
  const char* name;
  const char* type;  // "string", "integer", "number", "boolean", "array"
  const char* flag;  // "" for a positional argument
  const char* description;
  bool required = false;
};

struct Tool {
  const char* name;
  const char* description;
  std::vector<std::string> command;  // kopt subcommand words
  std::vector<Arg> args;
  bool long_running = false;
};

const std::vector<Tool>& tools() {
  static const std::vector<Tool> t = {
      {"env",
       "What this machine has: GPUs, driver, NVRTC, ncu and counter access, tools.",
       {"env"},
       {}},
      {"check",
       "Correctness of a problem's kernels over several seeds.",
       {"check"},
       {{"problem", "string", "", "problem directory", true},
        {"kernel", "string", "--kernel", "one kernel"},
        {"set", "array", "--set", "param values NAME=VALUE"}},
       true},
      {"bench",
       "Time kernels (cold L2), or compare two points interleaved.",
       {"bench"},
       {{"problem", "string", "", "problem directory", true},
        {"kernel", "string", "--kernel", "one kernel"},
        {"set", "array", "--set", "param values NAME=VALUE"},
        {"vs", "array", "--vs", "the other point NAME=VALUE"}},
       true},
      {"profile",
       "ncu metrics, roofline and bottleneck class with evidence.",
       {"profile"},
       {{"problem", "string", "", "problem directory", true},
        {"kernel", "string", "--kernel", "one kernel"},
        {"set", "array", "--set", "param values NAME=VALUE"}},
       true},
      {"analyze",
       "The profile analysis from a saved ncu CSV or .ncu-rep.",
       {"analyze"},
       {{"file", "string", "", "the CSV or .ncu-rep", true},
        {"kernel", "string", "--kernel", "kernel name"},
        {"problem", "string", "--problem", "problem directory (cost formulas)"}}},
      {"sass",
       "Machine-code facts and method signature verdicts.",
       {"sass"},
       {{"problem", "string", "", "problem directory", true},
        {"kernel", "string", "--kernel", "one kernel"},
        {"method", "array", "--method", "methods to verify"}}},
      {"iter_open",
       "Open the next iteration: profile, headroom, budget, ranked suggestions or a reasoned stop, "
       "hypothesis.md.",
       {"iter", "open"},
       {{"run", "string", "", "run directory", true},
        {"problem", "string", "--problem", "problem (new run)"}},
       true},
      {"iter_branch",
       "Add a branch (a kernel source) to the open iteration.",
       {"iter", "branch"},
       {{"run", "string", "", "run directory", true},
        {"file", "string", "--file", "kernel source", true},
        {"kernel", "string", "--kernel", "which kernel it replaces"},
        {"set", "array", "--set", "param values"},
        {"method", "array", "--method", "methods it applies"},
        {"ablates", "string", "--ablates", "method it leaves out"},
        {"hypothesis", "string", "--hypothesis",
         "what the branch should do and why, recorded before measurement"},
        {"expect", "array", "--expect", "predictions METRIC:up|down[:AMOUNT], judged at close"}}},
      {"iter_close",
       "Measure the branches, pick the champion, verify, attribute, judge the predictions, record.",
       {"iter", "close"},
       {{"run", "string", "", "run directory", true}},
       true},
      {"iter_finalize",
       "End the run.",
       {"iter", "finalize"},
       {{"run", "string", "", "run directory", true}}},
      {"experience_recommend",
       "Methods ranked by past outcomes for a family, chip and bottleneck.",
       {"experience", "recommend"},
       {{"family", "string", "--family", "kernel family"},
        {"chip", "string", "--chip", "sm_90, ..."},
        {"bottleneck", "string", "--bottleneck", "bottleneck class"}}},
      {"experience_add",
       "Record an outcome.",
       {"experience", "add"},
       {{"family", "string", "--family", "kernel family", true},
        {"chip", "string", "--chip", "sm_90, ...", true},
        {"bottleneck", "string", "--bottleneck", "bottleneck class"},
        {"method", "string", "--method", "method id", true},
        {"before", "number", "--before", "time without it (s)", true},
        {"after", "number", "--after", "time with it (s)", true}}},
      {"report",
       "Write report.md, benchmark.md and report.html for a run.",
       {"report"},
       {{"run", "string", "", "run directory", true},
        {"html", "boolean", "--html", "also report.html"}}},
  };
  return t;
}

json input_schema(const Tool& t) {
  json props = json::object(), required = json::array();
  for (const auto& a : t.args) {
    json p{{"type", a.type}, {"description", a.description}};
    if (std::string(a.type) == "array") p["items"] = {{"type", "string"}};
    props[a.name] = p;
    if (a.required) required.push_back(a.name);
  }
  return {{"type", "object"},
          {"properties", props},
          {"required", required},
          {"additionalProperties", false}};
}

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

// The kopt command line for a call, or an error message for bad arguments.
std::variant<std::vector<std::string>, std::string> command_for(const Tool& t, const json& args) {
  std::vector<std::string> argv = {self_executable().string()};
  argv.insert(argv.end(), t.command.begin(), t.command.end());
  if (!args.is_object()) return std::string("arguments must be an object");
  for (auto it = args.begin(); it != args.end(); ++it)
    if (std::none_of(t.args.begin(), t.args.end(),
                     [&](const Arg& a) { return it.key() == a.name; }))
      return "unknown argument '" + it.key() + "'";
  for (const auto& a : t.args) {
    if (!args.contains(a.name)) {
      if (a.required) return std::string("missing required argument '") + a.name + "'";
      continue;
    }
    const json& v = args[a.name];
    std::string type = a.type;
    bool ok = (type == "string" && v.is_string()) || (type == "integer" && v.is_number_integer()) ||
              (type == "number" && v.is_number()) || (type == "boolean" && v.is_boolean()) ||
              (type == "array" && v.is_array() &&
               std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); }));
    if (!ok) return std::string("argument '") + a.name + "' must be of type " + type;
    std::string flag = a.flag;
    if (type == "boolean") {
      if (v.get<bool>()) argv.push_back(flag);
    } else if (type == "array") {
      for (const auto& x : v) {
        argv.push_back(flag);
        argv.push_back(x.get<std::string>());
      }
    } else {
      if (!flag.empty()) argv.push_back(flag);
      argv.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
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
    for (const auto& t : tools())
      list.push_back(
          {{"name", t.name}, {"description", t.description}, {"inputSchema", input_schema(t)}});
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", {{"tools", list}}}};
  }
  if (method == "tools/call") {
    std::string name = params.value("name", "");
    auto t =
        std::find_if(tools().begin(), tools().end(), [&](const Tool& x) { return name == x.name; });
    if (t == tools().end()) return rpc_error(id, -32602, "unknown tool '" + name + "'");
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

}  // namespace kopt::cli
