#include "kopt/core/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "kopt/core/sandbox.hpp"

namespace kopt {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<char*> to_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// The program argv[0] names, found the one way every spawn of kopt finds it: a name with a '/' as
// given, else the first executable of that name on $PATH (find_program). Resolved before fork,
// since the child may only call async-signal-safe functions.
std::optional<fs::path> resolve_program(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  return find_program(argv[0]);
}

// Added to the errno a child reports when its sandbox, not its exec, failed.
constexpr int k_sandbox_failed = 1 << 20;

// In the child: report why it will not exec (an errno) through `report_fd`, and exit 127.
[[noreturn]] void report_and_exit(int report_fd, int e) {
  (void)!::write(report_fd, &e, sizeof e);
  ::_exit(127);
}

// In the child: exec the resolved program (with `envp` when given); on failure, report errno
// through `report_fd` and exit 127.
[[noreturn]] void exec_or_report(const std::optional<fs::path>& program, std::vector<char*>& args,
                                 int report_fd, char* const* envp = nullptr) {
  int e = ENOENT;
  if (program) {
    if (envp)
      ::execve(program->c_str(), args.data(), envp);
    else
      ::execv(program->c_str(), args.data());
    e = errno;
  }
  report_and_exit(report_fd, e);
}

// The parent's side of the exec report: 0 when the child's exec succeeded (the pipe closed
// empty), else the child's errno.
int read_exec_report(int read_fd) {
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(read_fd, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(read_fd);
  return got == static_cast<ssize_t>(sizeof exec_errno) ? exec_errno : 0;
}

// A signal to a command and its process group (the command leads its own group).
void signal_group(pid_t pid, int sig) {
  ::kill(-pid, sig);
  ::kill(pid, sig);
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = ::sigdescr_np(sig);
    return "signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "unknown wait status " + std::to_string(status);
}

CommandResult SystemCommandRunner::run(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout) {
  return run_watched(argv, timeout, RunWatch{});
}

namespace {

// The last whole line of `text` ("" when it holds none).
std::string last_line(const std::string& text) {
  std::size_t end = text.rfind('\n');
  while (end != std::string::npos && end > 0 && text[end - 1] == '\n') --end;
  if (end == std::string::npos || end == 0) return "";
  std::size_t start = text.rfind('\n', end - 1);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start);
}

// Stops a command for its watcher: SIGTERM to its group first, SIGKILL once the grace is over.
struct Stopper {
  const RunWatch& watch;
  pid_t pid;
  CommandResult& result;
  Clock::time_point kill_at{};
  void poll() {
    if (pid <= 0) return;
    if (!result.stopped && watch.stop && watch.stop()) {
      result.stopped = true;
      signal_group(pid, SIGTERM);
      kill_at = Clock::now() + watch.grace;
    } else if (result.stopped && Clock::now() >= kill_at) {
      signal_group(pid, SIGKILL);
    }
  }
};

}  // namespace

CommandResult run_watched(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const RunWatch& watch) {
  CommandResult result;
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (argv.empty() || ::pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) return result;
  auto args = to_argv(argv);
  auto program = resolve_program(argv);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    // A command dies with kopt: a killed campaign or tune leaves no step running on.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    exec_or_report(program, args, exec_pipe[1]);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  result.started = pid > 0 && read_exec_report(exec_pipe[0]) == 0;

  const bool watched = watch.on_tick || watch.stop;
  const auto tick = std::max(watch.tick, std::chrono::milliseconds(10));
  auto next_tick = Clock::now() + tick;
  Stopper stopper{watch, pid, result};
  // Between polls: the watcher's tick and its stop.
  auto between = [&] {
    if (!watched) return;
    if (watch.on_tick && Clock::now() >= next_tick) {
      watch.on_tick(last_line(result.err));
      next_tick = Clock::now() + tick;
    }
    stopper.poll();
  };
  auto wait_ms = [&](Clock::time_point deadline) {
    int left = remaining_ms(deadline);
    return watched ? std::min(left, static_cast<int>(tick.count())) : left;
  };

  auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    int n = ::poll(fds, 2, wait_ms(deadline));
    if (n == 0 && Clock::now() >= deadline) {
      signal_group(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; n > 0 && i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<std::size_t>(got));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    between();
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  if (pid > 0) {
    // A child that closed its pipes may still be running: keep the deadline.
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        signal_group(pid, SIGKILL);
        result.timed_out = true;
        ::waitpid(pid, &status, 0);
        break;
      }
      between();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  }
  return result;
}

void FakeCommandRunner::on(const std::string& command_line, CommandResult result) {
  m_answers[command_line] = std::move(result);
}

CommandResult FakeCommandRunner::run(const std::vector<std::string>& argv,
                                     std::chrono::milliseconds) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
  calls.push_back(line);
  if (auto it = m_answers.find(line); it != m_answers.end()) return it->second;
  if (!argv.empty())
    if (auto it = m_answers.find(argv[0]); it != m_answers.end()) return it->second;
  return CommandResult{};  // not started: as if the program did not exist
}

std::optional<fs::path> find_program(const std::string& name,
                                     const std::vector<fs::path>& extra_dirs) {
  auto executable = [](const fs::path& p) {
    return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p);
  };
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return fs::path(name);
    return std::nullopt;
  }
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    std::size_t start = 0;
    while (start <= all.size()) {
      std::size_t end = all.find(':', start);
      if (end == std::string::npos) end = all.size();
      fs::path dir = all.substr(start, end - start);
      if (!dir.empty() && executable(dir / name)) return dir / name;
      start = end + 1;
    }
  }
  for (const auto& dir : extra_dirs)
    if (executable(dir / name)) return dir / name;
  return std::nullopt;
}

Expected<Subprocess> Subprocess::spawn(const std::vector<std::string>& argv,
                                       const fs::path& stderr_file, const SpawnOptions& options) {
  if (argv.empty()) return Unexpected(internal_error("spawn: no program given"));
  auto program = resolve_program(argv);
  if (!program)
    return Unexpected(
        environment_error("cannot start '" + argv[0] + "': " +
                          (argv[0].find('/') == std::string::npos ? "not found on PATH"
                                                                  : "no executable file there")));
  int in_pipe[2], out_pipe[2], exec_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0)
    return Unexpected(internal_error("pipe failed: " + std::string(std::strerror(errno))));
  auto args = to_argv(argv);
  std::string err_path = stderr_file.string();
  std::string cwd = options.cwd.string();
  // The child's environment, made here: after fork only system calls are safe.
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    for (char** e = environ; *e; ++e) {
      std::string_view entry(*e);
      bool replaced = std::any_of(options.env.begin(), options.env.end(), [&](const auto& kv) {
        return entry.size() > kv.first.size() && entry.substr(0, kv.first.size()) == kv.first &&
               entry[kv.first.size()] == '=';
      });
      if (!replaced) env_strings.emplace_back(entry);
    }
    for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  pid_t pid = ::fork();
  if (pid < 0)
    return Unexpected(internal_error("fork failed: " + std::string(std::strerror(errno))));
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err_fd >= 0) ::dup2(err_fd, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) report_and_exit(exec_pipe[1], errno);
    if (options.sandbox)
      if (int e = options.sandbox->apply(); e != 0)
        report_and_exit(exec_pipe[1], e | k_sandbox_failed);
    exec_or_report(program, args, exec_pipe[1], envp.empty() ? nullptr : envp.data());
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(exec_pipe[1]);
  if (int e = read_exec_report(exec_pipe[0]); e != 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    if (e & k_sandbox_failed)
      return Unexpected(
          environment_error("cannot confine " + program->string() +
                            " in its sandbox: " + std::strerror(e & ~k_sandbox_failed)));
    return Unexpected(
        environment_error("cannot start " + program->string() + ": " + std::strerror(e)));
  }
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker must not kill the orchestrator
  Subprocess p;
  p.m_pid = pid;
  p.m_lines = LineChannel(in_pipe[1], out_pipe[0]);
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept {
  *this = std::move(other);
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (running()) kill_and_reap();
    m_pid = std::exchange(other.m_pid, -1);
    m_lines = std::move(other.m_lines);
    m_end_signal = std::exchange(other.m_end_signal, 0);
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (running()) kill_and_reap();
}

std::string Subprocess::ended(int status) {
  m_pid = -1;
  m_end_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  m_lines.close();
  return describe_wait_status(status);
}

std::string Subprocess::kill_and_reap() {
  if (!running()) return "not running";
  ::kill(m_pid, SIGKILL);
  int status = 0;
  ::waitpid(m_pid, &status, 0);
  ended(status);
  m_end_signal = 0;  // kopt's own kill: not a limit of the machine's
  return describe_wait_status(status);
}

std::string Subprocess::reap(std::chrono::milliseconds timeout) {
  if (!running()) return "not running";
  auto deadline = Clock::now() + timeout;
  int status = 0;
  while (::waitpid(m_pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) return kill_and_reap() + " (killed: did not exit)";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ended(status);
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

}  // namespace kopt
