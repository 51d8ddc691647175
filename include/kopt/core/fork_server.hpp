#pragma once
// A fork server: one long-lived program that pays its start once (a Python that has imported
// torch) and forks a child for each caller that connects, instead of each caller starting the
// program anew. N callers at once then wait for one start, not N starts competing for the CPU.
//
// The protocol, over a Unix socket in a private directory (python/kopt_kernelbench_import.py
// --fork-server is the one server):
//   the server is started with the socket's path as its last argument, binds it, and writes
//   "listening" on its stdout; it forks a child for each connection it accepts, and ends when
//   its stdin closes (kopt ends or lets it go);
//   a caller connects and writes {"log": PATH}; the child sends its stdout and stderr there,
//   answers {"pid": N}, and from then on speaks the server's own line protocol on the socket.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/line_channel.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

// One child of a fork server: its lines, and its pid to kill it by (the server, not kopt, is
// its parent and reaps it).
class ForkedChild {
 public:
  ForkedChild() = default;
  ForkedChild(ForkedChild&& other) noexcept { *this = std::move(other); }
  ForkedChild& operator=(ForkedChild&& other) noexcept;
  ~ForkedChild() { kill(); }

  bool running() const { return m_pid > 0; }
  pid_t pid() const { return m_pid; }
  bool write_line(const std::string& line) { return m_lines.write_line(line); }
  LineChannel::ReadStatus read_line(std::string& line, std::chrono::milliseconds timeout) {
    return m_lines.read_line(line, timeout);
  }
  // SIGKILL, and the socket closed; "killed" or "not running".
  std::string kill();

 private:
  friend class ForkServer;
  pid_t m_pid = -1;
  LineChannel m_lines;
};

class ForkServer {
 public:
  // `argv` without the socket's path, which is appended. Nothing starts before the first fork().
  ForkServer(std::vector<std::string> argv, std::string name);
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // A new child whose output goes to `log`. The server starts on first use, and once more
  // where it no longer takes a connection (it died: its children so far live on); waits at most
  // `timeout` for it to listen and for the child to answer, which includes the server's own
  // start the first time. Environment: the program cannot start, or the socket's path is too
  // long; internal: it broke the protocol or is gone for good (the server's log's tail says how).
  Expected<ForkedChild> fork(const std::filesystem::path& log, std::chrono::milliseconds timeout);
  // How many times the server was started (1 after the first fork, more after restarts).
  int starts() const { return m_starts; }

 private:
  Expected<void> start(std::chrono::milliseconds timeout);
  // A socket connected to the server, or -1 and why not (errno's words).
  int connect(std::string& why) const;
  std::vector<std::string> m_argv;
  std::string m_name;
  TempDir m_dir;  // 0700: the socket and the server's log, for kopt alone
  std::filesystem::path m_socket;
  std::mutex m_mutex;
  Subprocess m_server;
  int m_starts = 0;  // under m_mutex: a caller that found the server gone restarts it only if
                     // no other caller did since its attempt
};

}  // namespace kopt
