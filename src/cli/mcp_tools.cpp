#include "mcp_tools.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "kopt/core/suggest.hpp"

namespace kopt {
extern const char* const k_command_documents;  // docs/json/commands.json
}

namespace kopt::cli::mcp {
namespace {
using nlohmann::json;

// The table, built once and bound to storage the server never reads (a call runs the command
// in a child process), and the device family (--backend) every tool takes.
struct Tools {
  std::shared_ptr<GlobalOptions> g = std::make_shared<GlobalOptions>();
  std::vector<Command> commands = command_table(g);
  std::vector<Option> globals = global_options(*g);
  json documents = json::parse(k_command_documents);
  std::vector<const Command*> served;  // the commands that are tools
  std::vector<json> list;
  const Option& backend() const { return globals.back(); }
  Tools() {
    for (const auto& c : commands)
      if (!c.internal && c.tool) served.push_back(&c);
    for (const Command* c : served) list.push_back(schema_of(*c));
  }
  json schema_of(const Command& c) const {
    json s = tool_schema(c);
    const Option& b = backend();
    s["inputSchema"]["properties"][b.argument_name()] = {
        {"type", "string"}, {"description", b.help}, {"enum", b.choices}, {"default", "auto"}};
    s["outputSchema"] = output_schema_of(c);
    s["description"] = s["description"].get<std::string>() +
                       " (its result is the document of `kopt " + c.name() +
                       " --json`; exit 1, a candidate's failed verdict, is a result, not an error)";
    return s;
  }
  // The output schema: the fields of its --json document, and those of the error document
  // every command prints on failure. Throws where commands.json has no entry: a command
  // without a documented document cannot be a tool.
  json output_schema_of(const Command& c) const {
    const std::string doc = c.document.empty() ? c.name() : c.document;
    json props = json::object();
    bool found = false;
    // Its document, and the variants some options print ("check (axes)"), merged.
    for (auto it = documents.begin(); it != documents.end(); ++it) {
      const std::string& key = it.key();
      if (key != doc && key.rfind(doc + " (", 0) != 0) continue;
      found = true;
      for (auto f = it->at("fields").begin(); f != it->at("fields").end(); ++f)
        props[f.key()] = {{"description", f.value()}};
    }
    if (!found)
      throw std::logic_error("docs/json/commands.json has no entry '" + doc + "' for the tool " +
                             c.tool_name());
    for (auto f = documents["error"]["fields"].begin(); f != documents["error"]["fields"].end();
         ++f)
      if (!props.contains(f.key())) props[f.key()] = {{"description", f.value()}};
    props["schema_version"] = {{"type", "integer"}, {"description", "the document's schema"}};
    return {
        {"type", "object"}, {"properties", props}, {"required", json::array({"schema_version"})}};
  }
};

const Tools& tools() {
  static const Tools t;
  return t;
}

std::string tail_lines(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  std::size_t from = text.size() - max_chars;
  std::size_t nl = text.find('\n', from);
  return "…" + text.substr(nl == std::string::npos ? from : nl);
}

}  // namespace

const std::vector<json>& tool_list() {
  return tools().list;
}

const Command* find_tool(const std::string& name) {
  for (const Command* c : tools().served)
    if (c->tool_name() == name) return c;
  return nullptr;
}

std::vector<std::string> tool_names() {
  std::vector<std::string> out;
  for (const Command* c : tools().served) out.push_back(c->tool_name());
  return out;
}

std::variant<std::vector<std::string>, std::string> command_line(const Command& c,
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
  argv.push_back("--verbose");  // its log on stderr: the progress notifications' messages
  return argv;
}

json tool_result(const std::string& tool, const CommandResult& r) {
  json doc;
  try {
    doc = json::parse(r.out);
  } catch (const json::parse_error&) {
    doc = nullptr;
  }
  const bool documented = doc.is_object() && doc.contains("schema_version");
  const bool verdict =
      r.started && !r.timed_out && r.signal == 0 && (r.exit_code == 0 || r.exit_code == 1);
  std::string text;
  if (documented) {
    text = r.out;
  } else {
    // No document: say how the command ended, with the end of its log.
    std::string how = !r.started    ? "could not be started"
                      : r.timed_out ? "ran past the server's time limit and was killed"
                      : r.signal    ? fmt::format("was ended by signal {}", r.signal)
                                 : fmt::format("exited with code {} and no document", r.exit_code);
    text = fmt::format("kopt {} {}", tool, how);
    if (!r.err.empty()) text += ":\n" + tail_lines(r.err, 4000);
  }
  json result = text_result(text, !(verdict && documented));
  result["_meta"] = {{"kopt/exit_code", r.started && !r.signal ? r.exit_code : -1}};
  if (documented) result["structuredContent"] = doc;
  return result;
}

json text_result(const std::string& text, bool is_error) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

}  // namespace kopt::cli::mcp
