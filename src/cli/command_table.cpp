#include "command_table.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <new>
#include <sstream>

#include "commands.hpp"
#include "kopt/core/suggest.hpp"

namespace kopt::cli {
using nlohmann::json;

namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

std::string number_text(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

}  // namespace

bool Option::repeatable() const {
  return std::holds_alternative<std::vector<std::string>*>(target) ||
         std::holds_alternative<std::vector<int>*>(target);
}

std::string Option::long_name() const {
  std::string out = names;
  for (std::size_t at = 0; at < names.size();) {
    std::size_t comma = names.find(',', at);
    std::string one = names.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (one.rfind("--", 0) == 0 || one.rfind("-", 0) != 0) out = one;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::string Option::argument_name() const {
  std::string n = long_name();
  n.erase(0, n.find_first_not_of('-'));
  if (negates && n.rfind("no-", 0) == 0) n = "no_" + n.substr(3);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

std::string Option::schema_type() const {
  return std::visit(Overloaded{[](bool*) { return std::string("boolean"); },
                               [](double*) { return std::string("number"); },
                               [](std::string*) { return std::string("string"); },
                               [](std::optional<std::string>*) { return std::string("string"); },
                               [](std::vector<std::string>*) { return std::string("array"); },
                               [](std::vector<int>*) { return std::string("array"); },
                               [](auto*) { return std::string("integer"); }},
                    target);
}

std::string Option::default_text() const {
  return std::visit(
      Overloaded{[](bool*) { return std::string(); }, [](double* v) { return number_text(*v); },
                 [](std::string* v) { return *v; },
                 [](std::optional<std::string>* v) { return v->value_or(""); },
                 [](std::vector<std::string>*) { return std::string(); },
                 [](std::vector<int>*) { return std::string(); },
                 [](auto* v) { return std::to_string(*v); }},
      target);
}

std::string Command::name() const {
  std::string out;
  for (const auto& p : path) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string Command::tool_name() const {
  std::string out;
  for (const auto& p : path) out += (out.empty() ? "" : "_") + p;
  return out;
}

const Option* Command::find(const std::string& long_name) const {
  for (const auto& o : options)
    if (o.long_name() == long_name) return &o;
  return nullptr;
}

std::vector<Option> global_options(GlobalOptions& g) {
  return {
      {.names = "--json",
       .help = "print one JSON document on stdout (logs go to stderr)",
       .target = &g.json},
      {.names = "-v,--verbose", .help = "log progress to stderr", .target = &g.verbose},
      {.names = "--backend",
       .help = "the device: cuda (a CUDA GPU: a problem's CUDA, solve() and Triton kernels), "
               "opencl, or auto (CUDA when a CUDA GPU is present, else OpenCL)",
       .target = &g.backend,
       .choices = {"cuda", "opencl", "auto", "triton"},
       .env = "KOPT_BACKEND"},
  };
}

namespace {

// The help line of an option: its text and its default.
std::string help_with_default(const Option& o) {
  std::string d = o.default_text();
  if (o.flag() || d.empty() || o.required) return o.help;
  return o.help + " (default: " + d + ")";
}

// The bounds of a number option, said in words ("1 to 1000", "above 0").
CLI::Validator number_check(const Option& o) {
  std::string what = o.positive ? "a number above 0"
                     : o.non_negative
                         ? "a number of 0 or more"
                         : fmt::format("a number from {} to {}", o.range->first, o.range->second);
  return CLI::Validator(
      [o, what](std::string& text) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) throw std::invalid_argument(text);
        } catch (const std::exception&) {
          return "'" + text + "' is not a number (it takes " + what + ")";
        }
        bool ok = o.positive       ? v > 0
                  : o.non_negative ? v >= 0
                                   : v >= o.range->first && v <= o.range->second;
        return ok ? std::string() : text + " is not " + what;
      },
      "");
}

void add_option(CLI::App* app, const Option& o) {
  CLI::Option* added = nullptr;
  std::string help = help_with_default(o);
  std::visit(Overloaded{[&](bool* v) {
                          if (o.negates)
                            added = app->add_flag_callback(
                                o.names, [v] { *v = false; }, help);
                          else
                            added = app->add_flag(o.names, *v, help);
                        },
                        [&](auto* v) { added = app->add_option(o.names, *v, help); }},
             o.target);
  if (!o.choices.empty()) added->check(CLI::IsMember(o.choices));
  if (o.range || o.positive || o.non_negative) added->check(number_check(o));
  if (o.required) added->required();
  if (!o.env.empty()) added->envname(o.env);
}

// Every option name a command accepts, its own and the global ones.
std::vector<std::string> flag_names(const Command& c, const std::vector<Option>& globals) {
  std::vector<std::string> out;
  auto add = [&](const Option& o) {
    if (o.positional()) return;
    std::stringstream s(o.names);
    std::string one;
    while (std::getline(s, one, ',')) out.push_back(one);
  };
  for (const auto& o : c.options) add(o);
  for (const auto& o : globals) add(o);
  return out;
}

// The commands whose path starts with `prefix` and has one word more.
std::vector<std::string> next_words(const std::vector<Command>& table,
                                    const std::vector<std::string>& prefix,
                                    bool with_internal = false) {
  std::vector<std::string> out;
  for (const auto& c : table) {
    if ((c.internal && !with_internal) || c.path.size() <= prefix.size()) continue;
    if (!std::equal(prefix.begin(), prefix.end(), c.path.begin())) continue;
    if (std::find(out.begin(), out.end(), c.path[prefix.size()]) == out.end())
      out.push_back(c.path[prefix.size()]);
  }
  return out;
}

int json_flag_error(const std::string& command, const std::string& message, bool json) {
  if (json)
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", command},
                                {"error", message},
                                {"exit_code", 2}}
                     .dump(2)
              << "\n";
  std::cerr << (command == "kopt" ? "kopt" : "kopt " + command) << ": " << message << "\n";
  return 2;
}

// The words of argv that name a command (and where they end), skipping the global options.
struct Located {
  std::vector<std::string> path;
  std::string unknown;  // a word where a command (or a step of one) was expected
};
Located locate_command(int argc, char** argv, const std::vector<Command>& table) {
  Located out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    auto words = next_words(table, out.path, /*with_internal=*/true);
    if (std::find(words.begin(), words.end(), a) != words.end()) {
      out.path.push_back(a);
      continue;
    }
    bool complete = std::any_of(table.begin(), table.end(),
                                [&](const Command& c) { return c.path == out.path; });
    if (!complete) out.unknown = a;
    break;
  }
  return out;
}

}  // namespace

int run_command_line(int argc, char** argv) {
  auto g = std::make_shared<GlobalOptions>();
  std::vector<Command> table = command_table(g);
  std::vector<Option> globals = global_options(*g);
  bool wants_json =
      std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string(a) == "--json"; });

  CLI::App app{"kopt: evidence-driven GPU kernel optimization"};
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  for (const auto& o : globals) add_option(&app, o);
  app.require_subcommand(1);
  app.fallthrough();
  app.allow_extras();  // what no command knows is answered below, with what was meant
  std::map<const CLI::App*, const Command*> leaf;
  std::map<std::string, CLI::App*> groups;  // "iter", "experience", "import"
  for (const auto& c : table) {
    CLI::App* parent = &app;
    std::string prefix;
    for (std::size_t i = 0; i + 1 < c.path.size(); ++i) {
      prefix += (prefix.empty() ? "" : " ") + c.path[i];
      auto it = groups.find(prefix);
      if (it == groups.end()) {
        CLI::App* grp = parent->add_subcommand(c.path[i], "");
        grp->require_subcommand(1);
        grp->fallthrough();
        grp->allow_extras();
        it = groups.emplace(prefix, grp).first;
      }
      parent = it->second;
    }
    CLI::App* sub = parent->add_subcommand(c.path.back(), c.help);
    sub->fallthrough();
    sub->allow_extras();
    if (c.internal) sub->group("");
    for (const auto& o : c.options) add_option(sub, o);
    leaf[sub] = &c;
  }
  for (const auto& [prefix, grp] : groups) {
    std::string words;
    for (const auto& w : next_words(table, {prefix.substr(0, prefix.find(' '))}))
      words += (words.empty() ? "" : ", ") + w;
    if (grp->get_description().empty()) grp->description("one of: " + words);
  }

  Located where = locate_command(argc, argv, table);
  std::string name = where.path.empty() ? "" : where.path.front();
  for (std::size_t i = 1; i < where.path.size(); ++i) name += " " + where.path[i];
  if (!where.unknown.empty()) {
    auto known = next_words(table, where.path);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    std::string what = where.path.empty() ? "command" : "step of kopt " + name;
    return json_flag_error(name.empty() ? "kopt" : name,
                           "no " + what + " '" + where.unknown + "'" +
                               did_you_mean(where.unknown, known) + "; known: " + list,
                           wants_json);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return json_flag_error(name.empty() ? "kopt" : name, e.what(), wants_json);
  }
  const CLI::App* selected = &app;
  while (!selected->get_subcommands().empty()) selected = selected->get_subcommands().front();
  auto it = leaf.find(selected);
  if (it == leaf.end())
    return json_flag_error("kopt", "no command given (kopt --help)", wants_json);
  const Command& c = *it->second;
  std::vector<std::string> extras = app.remaining(true);
  if (!extras.empty()) {
    const std::string& first = extras.front();
    if (first.rfind("-", 0) == 0) {
      std::string flag = first.substr(0, first.find('='));
      std::string hint = did_you_mean(flag, flag_names(c, globals));
      if (hint.empty())
        for (const auto& other : table)
          if (&other != &c && !other.internal && other.find(flag)) {
            hint = " (an option of kopt " + other.name() + ")";
            break;
          }
      return json_flag_error(
          c.name(),
          "unknown option " + flag + hint + "; kopt " + c.name() + " --help lists its options",
          g->json || wants_json);
    }
    return json_flag_error(c.name(), "unexpected argument '" + first + "'", g->json || wants_json);
  }
  set_backend_choice(g->backend);
  try {
    return c.run();
  } catch (const std::bad_alloc&) {
    return report_error(*g, c.name(), exit_code(ErrorKind::environment),
                        "kopt ran out of host memory: the machine's limit, not a kernel's "
                        "doing, and no verdict on one");
  } catch (const std::exception& e) {
    return report_error(*g, c.name(), 4, std::string("internal error: ") + e.what());
  }
}

json tool_schema(const Command& c) {
  json props = json::object(), required = json::array();
  for (const auto& o : c.options) {
    json p{{"type", o.schema_type()}, {"description", o.help}};
    if (o.schema_type() == "array")
      p["items"] = {
          {"type", std::holds_alternative<std::vector<int>*>(o.target) ? "integer" : "string"}};
    if (!o.choices.empty()) p["enum"] = o.choices;
    std::string d = o.default_text();
    if (!d.empty() && !o.required) {
      if (o.schema_type() == "integer") {
        try {
          p["default"] = std::stoll(d);
        } catch (const std::exception&) {
        }
      } else if (o.schema_type() == "number") {
        p["default"] = std::stod(d);
      } else {
        p["default"] = d;
      }
    }
    if (o.flag()) p["default"] = false;
    props[o.argument_name()] = p;
    if (o.required) required.push_back(o.argument_name());
  }
  return {{"name", c.tool_name()},
          {"description", c.help},
          {"inputSchema",
           {{"type", "object"},
            {"properties", props},
            {"required", required},
            {"additionalProperties", false}}}};
}

}  // namespace kopt::cli

namespace kopt::cli {

std::vector<Command> command_table(const std::shared_ptr<GlobalOptions>& g) {
  std::vector<Command> all;
  for (auto* part : {env_commands, check_commands, bench_commands, sass_commands, profile_commands,
                     tune_commands, optimize_commands, iter_commands, report_commands,
                     experience_commands, specs_commands, import_commands, init_commands,
                     export_commands, campaign_commands, mcp_commands, worker_commands})
    for (auto& c : part(g)) all.push_back(std::move(c));
  return all;
}

}  // namespace kopt::cli
