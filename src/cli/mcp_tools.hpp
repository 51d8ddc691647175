#pragma once
// The MCP tools of `kopt mcp` (docs/architecture.md §4): every command of the table an agent may
// call, its options as the tool's input schema, its --json document (docs/json/commands.json,
// built into the binary) as the tool's output schema, and a call that runs the command with
// --json in a child process and answers with what it printed, so that tools and CLI can never
// disagree.
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "command_table.hpp"
#include "kopt/core/process.hpp"

namespace kopt::cli::mcp {

// The tools/list entries: name, description, inputSchema, outputSchema.
const std::vector<nlohmann::json>& tool_list();
// The command of a tool, or null; and the names, for "did you mean".
const Command* find_tool(const std::string& name);
std::vector<std::string> tool_names();

// The kopt command line of a call, or why its arguments are wrong.
std::variant<std::vector<std::string>, std::string> command_line(const Command& c,
                                                                 const nlohmann::json& args);

// A CallToolResult of text alone (a call's arguments refused: `is_error`).
nlohmann::json text_result(const std::string& text, bool is_error);

// The CallToolResult of a finished command: its document as text and as structuredContent,
// `isError` unless it ended with a verdict (exit 0, or 1: a candidate failed, which the document
// says) and a document, and the exit code in `_meta`.
nlohmann::json tool_result(const std::string& tool, const CommandResult& r);

}  // namespace kopt::cli::mcp
