#pragma once
// Process spawning behind a small interface (docs/architecture.md §5), with a fake for tests.
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/core/line_channel.hpp"

namespace kopt {

struct CommandResult {
  bool started = false;    // false: the program could not be executed at all
  int exit_code = -1;      // valid when exited normally
  int signal = 0;          // non-zero when killed by a signal
  bool timed_out = false;  // killed by us after the timeout
  bool stopped = false;    // stopped by its watcher (RunWatch::stop)
  std::string out;         // stdout
  std::string err;         // stderr
  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
};

// Runs a command to completion and captures its output.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const std::vector<std::string>& argv,
                            std::chrono::milliseconds timeout) = 0;
};

class SystemCommandRunner final : public CommandRunner {
 public:
  CommandResult run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override;
};

// What a caller that watches a command while it runs sees and may do (the MCP server's progress
// and cancellation): `on_tick` about every `tick`, with the last whole line the command wrote to
// stderr so far ("" before the first); and once `stop` answers true, the command's process group
// is sent SIGTERM, then SIGKILL after `grace` (a run killed at any moment resumes).
struct RunWatch {
  std::chrono::milliseconds tick{1000};
  std::function<void(const std::string& last_err_line)> on_tick;
  std::function<bool()> stop;
  std::chrono::milliseconds grace{3000};
};
// SystemCommandRunner::run, watched.
CommandResult run_watched(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const RunWatch& watch);

// Answers from a table keyed by argv[0] (and the whole command line); for tests.
class FakeCommandRunner final : public CommandRunner {
 public:
  void on(const std::string& command_line, CommandResult result);
  CommandResult run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout) override;
  std::vector<std::string> calls;

 private:
  std::map<std::string, CommandResult> m_answers;
};

// Finds an executable: as given if it contains '/', else on $PATH, else in extra_dirs.
std::optional<std::filesystem::path> find_program(
    const std::string& name, const std::vector<std::filesystem::path>& extra_dirs = {});

class PreparedSandbox;

// How a long-lived child starts, beyond its command line.
struct SpawnOptions {
  // Confines the child before it execs (core/sandbox.hpp); it must outlive the spawn call.
  const PreparedSandbox* sandbox = nullptr;
  // Variables set (or replaced) in the child's environment; the rest is inherited.
  std::vector<std::pair<std::string, std::string>> env;
  std::filesystem::path cwd;  // empty: this process's
};

// A long-lived child with pipes to its stdin and stdout; stderr goes to a file.
class Subprocess {
 public:
  static Expected<Subprocess> spawn(const std::vector<std::string>& argv,
                                    const std::filesystem::path& stderr_file,
                                    const SpawnOptions& options = {});
  Subprocess() = default;
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  bool running() const { return m_pid > 0; }
  pid_t pid() const { return m_pid; }
  // Writes one line (a newline is appended). False when the child is gone.
  bool write_line(const std::string& line) { return m_lines.write_line(line); }
  using ReadStatus = LineChannel::ReadStatus;
  // Reads one line from the child's stdout, waiting at most timeout.
  ReadStatus read_line(std::string& line, std::chrono::milliseconds timeout) {
    return m_lines.read_line(line, timeout);
  }
  // Closes the child's stdin: it reads EOF (a polite way to ask it to end).
  void close_stdin() { m_lines.close_write(); }
  // Kills (SIGKILL) and reaps; returns a description of how the child ended.
  std::string kill_and_reap();
  // Waits for exit (after EOF); returns "exit code N" or "signal N (NAME)".
  std::string reap(std::chrono::milliseconds timeout);
  // After a reap: whether the child was ended by a limit of the machine's, not by what it ran
  // (SIGXFSZ: a file past the file-size limit; SIGXCPU: the CPU-time limit). Such an end is
  // kopt's environment failing, never a candidate's verdict.
  bool ended_by_a_limit() const { return m_end_signal == SIGXFSZ || m_end_signal == SIGXCPU; }

 private:
  std::string ended(int status);
  pid_t m_pid = -1;
  int m_end_signal = 0;
  LineChannel m_lines;  // the child's stdin and stdout
};

std::string describe_wait_status(int status);

// The running executable (/proc/self/exe), to start workers and one-shot runs with; "kopt"
// when it cannot be read.
std::filesystem::path self_executable();

}  // namespace kopt
