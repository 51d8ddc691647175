// The README's command list against the command table (src/cli/command_table.hpp), so that the
// two cannot drift apart: every command of the table is in the README, every command the README
// names exists, and every flag on a README usage line is an option of that command.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli/command_table.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt::cli {
namespace {

struct Usage {
  std::vector<std::string> path;
  std::set<std::string> flags;
  int line = 0;
};

// The usage lines of the README's "## Commands" block: "kopt WORDS [--flag ...]", its
// continuation lines (indented, starting with '['), and several usages on one line joined by
// " · ". Alternatives (open|branch) expand into one usage each.
std::vector<Usage> readme_usages(const std::vector<Command>& table) {
  std::ifstream in(test::source_dir() / "README.md");
  std::string line;
  bool in_section = false, in_block = false;
  std::vector<Usage> out;
  std::vector<std::size_t> current;  // the usages the continuation lines add to
  std::set<std::string> words;
  for (const auto& c : table)
    for (const auto& w : c.path) words.insert(w);
  static const std::regex flag(R"((--[a-z][a-z0-9-]*))");
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Commands";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      continue;
    }
    if (!in_block) continue;
    auto add_flags = [&](const std::string& text, const std::vector<std::size_t>& to) {
      for (auto it = std::sregex_iterator(text.begin(), text.end(), flag);
           it != std::sregex_iterator(); ++it)
        for (std::size_t u : to) out[u].flags.insert((*it)[1]);
    };
    if (line.rfind("kopt ", 0) == 0) {
      current.clear();
      std::size_t at = 0;
      while (at != std::string::npos) {
        std::size_t dot = line.find(" · ", at);
        std::string one = line.substr(at, dot == std::string::npos ? dot : dot - at);
        at = dot == std::string::npos ? dot : dot + std::string(" · ").size();
        std::istringstream s(one);
        std::string w;
        s >> w;  // kopt
        std::vector<std::vector<std::string>> paths{{}};
        while (s >> w) {
          std::vector<std::string> alts;
          std::stringstream a(w);
          for (std::string x; std::getline(a, x, '|');) alts.push_back(x);
          if (!std::all_of(alts.begin(), alts.end(), [&](auto& x) { return words.contains(x); }))
            break;
          std::vector<std::vector<std::string>> next;
          for (const auto& p : paths)
            for (const auto& x : alts) {
              next.push_back(p);
              next.back().push_back(x);
            }
          paths = next;
        }
        std::vector<std::size_t> these;
        for (const auto& p : paths) {
          out.push_back({p, {}, n});
          these.push_back(out.size() - 1);
        }
        add_flags(one, these);
        current.insert(current.end(), these.begin(), these.end());
      }
    } else if (line.find_first_not_of(' ') != std::string::npos &&
               line[line.find_first_not_of(' ')] == '[' && !current.empty()) {
      add_flags(line, current);
    } else {
      current.clear();
    }
  }
  return out;
}

TEST(ReadmeCommands, TheReadmeListsTheTableAndNothingElse) {
  auto g = std::make_shared<GlobalOptions>();
  std::vector<Command> table = command_table(g);
  std::vector<Usage> usages = readme_usages(table);
  ASSERT_FALSE(usages.empty()) << "no usage lines found in README.md's ## Commands";
  std::set<std::string> in_readme;
  for (const auto& u : usages) {
    std::string name;
    for (const auto& w : u.path) name += (name.empty() ? "" : " ") + w;
    in_readme.insert(name);
    const Command* c = nullptr;
    for (const auto& cmd : table)
      if (cmd.path == u.path) c = &cmd;
    ASSERT_TRUE(c) << "README.md:" << u.line << ": 'kopt " << name << "' is no command";
    std::vector<Option> globals = global_options(*g);
    for (const auto& f : u.flags) {
      bool known = c->find(f) != nullptr;
      for (const auto& o : c->options) known = known || o.names.find(f) != std::string::npos;
      for (const auto& o : globals) known = known || o.names.find(f) != std::string::npos;
      EXPECT_TRUE(known) << "README.md:" << u.line << ": kopt " << name << " has no option " << f;
    }
  }
  for (const auto& c : table) {
    if (!c.internal) {
      EXPECT_TRUE(in_readme.contains(c.name())) << "kopt " << c.name() << " is not in README.md";
    }
  }
}

// Every option's help says its default where it has one, so `--help` shows the time cap,
// the noise target and tune's strategy and budget without a look at the docs.
TEST(ReadmeCommands, HelpShowsTheDefaults) {
  auto g = std::make_shared<GlobalOptions>();
  for (const auto& c : command_table(g)) {
    if (c.name() != "bench" && c.name() != "tune") continue;
    for (const auto& o : c.options)
      if (o.long_name() == "--max-time" || o.long_name() == "--strategy" ||
          o.long_name() == "--budget" || o.long_name() == "--max-noise") {
        EXPECT_FALSE(o.default_text().empty()) << c.name() << " " << o.long_name();
      }
  }
  CommandResult help = SystemCommandRunner().run({test::kopt_binary().string(), "tune", "--help"},
                                                 std::chrono::seconds(30));
  EXPECT_NE(help.out.find("(default: auto)"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("(default: 30)"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace kopt::cli
