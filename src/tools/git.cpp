#include "kopt/tools/git.hpp"

namespace kopt {
using namespace std::chrono_literals;

GitRepo::GitRepo(CommandRunner& runner, std::filesystem::path dir)
    : m_runner(runner), m_dir(std::move(dir)) {}

Expected<CommandResult> GitRepo::git(std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", m_dir.string()});
  CommandResult r = m_runner.run(args, 60s);
  if (!r.started)
    return Unexpected(
        environment_error("git is not installed: run directories need it for their history"));
  if (!r.ok()) {
    std::string cmd;
    for (std::size_t i = 3; i < args.size(); ++i) cmd += (i > 3 ? " " : "") + args[i];
    return Unexpected(
        internal_error("git " + cmd + " failed in " + m_dir.string() + ": " + r.err + r.out));
  }
  return r;
}

Expected<void> GitRepo::init() {
  if (std::filesystem::exists(m_dir / ".git")) return {};
  for (auto args : {std::vector<std::string>{"init", "-q"},
                    {"config", "user.name", "kopt"},
                    {"config", "user.email", "kopt@localhost"},
                    {"config", "commit.gpgsign", "false"}})
    if (auto r = git(args); !r) return Unexpected(r.error());
  return {};
}

Expected<std::string> GitRepo::head() {
  auto r = git({"rev-parse", "HEAD"});
  if (!r) return Unexpected(r.error());
  std::string h = r->out;
  while (!h.empty() && (h.back() == '\n' || h.back() == '\r')) h.pop_back();
  return h;
}

Expected<std::string> GitRepo::commit_all(const std::string& message) {
  if (auto r = git({"add", "-A"}); !r) return Unexpected(r.error());
  auto status = git({"status", "--porcelain"});
  if (!status) return Unexpected(status.error());
  if (status->out.empty()) return head();
  if (auto r = git({"commit", "-q", "-m", message}); !r) return Unexpected(r.error());
  return head();
}

}  // namespace kopt
