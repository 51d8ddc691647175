#include "kopt/core/fork_server.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

namespace kopt {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? std::chrono::milliseconds(0) : left;
}

}  // namespace

ForkedChild& ForkedChild::operator=(ForkedChild&& other) noexcept {
  if (this != &other) {
    kill();
    m_pid = std::exchange(other.m_pid, -1);
    m_lines = std::move(other.m_lines);
  }
  return *this;
}

std::string ForkedChild::kill() {
  if (!running()) return "not running";
  ::kill(m_pid, SIGKILL);
  // Its server reaps it at once (SIGCHLD ignored), so the pid is gone when its exit is done:
  // what it held (a GPU's context and memory) is given back before kill() returns, as
  // Subprocess::kill_and_reap's wait does for a child of kopt's.
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (::kill(m_pid, 0) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m_pid = -1;
  m_lines.close();
  return "killed";
}

ForkServer::ForkServer(std::vector<std::string> argv, std::string name)
    : m_argv(std::move(argv)),
      m_name(std::move(name)),
      m_dir("kopt-fork-server"),
      m_socket(m_dir.path() / "server.sock") {}

ForkServer::~ForkServer() {
  if (!m_server.running()) return;
  m_server.close_stdin();  // the server ends; its children end as their callers close
  m_server.reap(std::chrono::seconds(5));
}

Expected<void> ForkServer::start(std::chrono::milliseconds timeout) {
  std::error_code ec;
  fs::remove(m_socket, ec);
  auto argv = m_argv;
  argv.push_back(m_socket.string());
  auto started = Subprocess::spawn(argv, m_dir.path() / "server.log");
  if (!started) return Unexpected(started.error());
  m_server = std::move(*started);
  ++m_starts;
  std::string line;
  auto read = m_server.read_line(line, timeout);
  if (read == LineChannel::ReadStatus::line && line == "listening") return {};
  std::string how = m_server.kill_and_reap();
  return Unexpected(internal_error(
      m_name + " did not start listening (" +
      (read == LineChannel::ReadStatus::timeout ? "no answer in time" : how) +
      "): " + (read == LineChannel::ReadStatus::line ? line.substr(0, 400) + ": " : "") +
      file_tail(m_dir.path() / "server.log", 2000)));
}

int ForkServer::connect(std::string& why) const {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, m_socket.c_str(), m_socket.string().size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("socket failed: ") + std::strerror(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

Expected<ForkedChild> ForkServer::fork(const fs::path& log, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  if (m_socket.string().size() >= sizeof(sockaddr_un{}.sun_path))
    return Unexpected(environment_error(
        m_name + ": the temporary directory's path is too long for a Unix socket (" +
        m_socket.string() + "): set TMPDIR to a shorter one"));
  int seen = 0;
  {
    std::lock_guard lock(m_mutex);
    if (!m_server.running())
      if (auto s = start(left_until(deadline)); !s) return Unexpected(s.error());
    seen = m_starts;
  }
  std::string why;
  int fd = connect(why);
  if (fd < 0) {
    // The server is gone (killed, or out of memory): started again, once, by the first caller
    // to find it so; its children so far are not its own to lose.
    std::lock_guard lock(m_mutex);
    if (m_starts == seen) {
      std::string how = m_server.kill_and_reap();
      std::string tail = file_tail(m_dir.path() / "server.log", 2000);
      if (auto s = start(left_until(deadline)); !s)
        return Unexpected(internal_error(m_name + " took no connection (" + why + "; it " + how +
                                         ": " + tail +
                                         ") and did not start again: " + s.error().message));
    }
    fd = connect(why);
    if (fd < 0)
      return Unexpected(internal_error("cannot connect to " + m_name + ", started again: " + why +
                                       ": " + file_tail(m_dir.path() / "server.log", 2000)));
  }
  ForkedChild child;
  child.m_lines = LineChannel(fd, fd);
  std::string line;
  auto read = LineChannel::ReadStatus::eof;
  if (child.write_line(nlohmann::json{{"log", fs::absolute(log).string()}}.dump()))
    read = child.read_line(line, left_until(deadline));
  if (read == LineChannel::ReadStatus::line) try {
      auto hello = nlohmann::json::parse(line);
      child.m_pid = hello.at("pid").get<pid_t>();
      if (child.m_pid > 0) return child;
    } catch (const nlohmann::json::exception&) {
    }
  return Unexpected(internal_error(
      m_name + "'s child did not say who it is (" +
      (read == LineChannel::ReadStatus::timeout ? "no answer in time"
       : read == LineChannel::ReadStatus::eof   ? "it closed the connection"
                                                : "it answered " + line.substr(0, 400)) +
      "): " + file_tail(log, 2000) + " " + file_tail(m_dir.path() / "server.log", 2000)));
}

}  // namespace kopt
