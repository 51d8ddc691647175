#pragma once
// The one table of kopt's commands: each command's name, options (type, default, help) and
// handler, written once beside its handler (cmd_*.cpp). The command-line parser, `--help`
// (defaults included), the "did you mean" answers and the MCP tools' input schemas are all
// made from it, so they cannot drift apart (ninja's table of subtools).
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kopt::cli {

// Where an option's value goes; what it holds before parsing is the option's default.
// (std::uint64_t is std::size_t here: one alternative serves both.)
using Binding =
    std::variant<bool*, int*, unsigned*, std::size_t*, double*, std::string*,
                 std::optional<std::string>*, std::vector<std::string>*, std::vector<int>*>;
static_assert(std::is_same_v<std::uint64_t, std::size_t>, "a seed binds as a std::size_t");

// Written with designated initializers: {.names = "--seeds", .help = "...", .target = &o.seeds}.
struct Option {
  std::string names;  // "--max-time", "-v,--verbose"; a positional argument: "problem"
  std::string help;
  Binding target;
  std::vector<std::string> choices;  // the values it takes, where they are few
  bool required = false;
  bool negates = false;                            // a flag that sets its bool false ("--no-check")
  std::optional<std::pair<double, double>> range;  // inclusive
  bool positive = false;                           // a number above 0
  bool non_negative = false;                       // a number of 0 or more
  std::string env;                                 // an environment variable that sets it too

  bool positional() const { return names.rfind("-", 0) != 0; }
  bool flag() const { return std::holds_alternative<bool*>(target); }
  bool repeatable() const;
  // The long name as typed ("--max-time"), or the positional's name.
  std::string long_name() const;
  // The name of the MCP tool argument: "max_time", "problem".
  std::string argument_name() const;
  // The JSON Schema type of its value: boolean, integer, number, string, array.
  std::string schema_type() const;
  // The bound value as text, "" for none (an empty list, an unset optional, a flag).
  std::string default_text() const;
};

struct Command {
  std::vector<std::string> path;  // {"iter", "open"}
  std::string help;
  std::vector<Option> options;
  std::function<int()> run;
  bool internal = false;  // worker, probe-kernel: not in --help, not an MCP tool
  bool tool = true;       // an MCP tool (mcp itself is not)
  // The entry of docs/json/commands.json its --json prints (the MCP tool's output schema),
  // where that is not its name: "optimize" for the iter steps, which print the run state.
  std::string document;
  std::shared_ptr<void> storage;  // the options the bindings point into

  std::string name() const;       // "iter open"
  std::string tool_name() const;  // "iter_open"
  const Option* find(const std::string& long_name) const;
};

// What every command takes.
struct GlobalOptions {
  bool json = false;
  bool verbose = false;
  std::string backend = "auto";  // cuda | opencl | auto (triton: read as cuda)
};

// The whole table, each command bound to fresh option storage and to `g`.
std::vector<Command> command_table(const std::shared_ptr<GlobalOptions>& g);
// The options every command takes (--json, --verbose, --backend), bound to `g`.
std::vector<Option> global_options(GlobalOptions& g);

// Parses argv against the table and runs the command; a usage error is answered with the
// command's name, what was wrong, what was meant where a near name exists, and exit 2.
int run_command_line(int argc, char** argv);

// The MCP tool of a command: name, description, inputSchema (every option an argument, with
// its type, default and help); kopt mcp adds the device family and the output schema.
nlohmann::json tool_schema(const Command& c);

}  // namespace kopt::cli
