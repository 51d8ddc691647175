#include "kopt/core/line_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace kopt {
using Clock = std::chrono::steady_clock;

LineChannel::LineChannel(LineChannel&& other) noexcept {
  *this = std::move(other);
}

LineChannel& LineChannel::operator=(LineChannel&& other) noexcept {
  if (this != &other) {
    close();
    m_write = std::exchange(other.m_write, -1);
    m_read = std::exchange(other.m_read, -1);
    m_pending = std::move(other.m_pending);
  }
  return *this;
}

bool LineChannel::write_line(const std::string& line) {
  if (m_write < 0) return false;
  std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    // send() on a socket, so that a closed peer is an error, not SIGPIPE; write() on a pipe
    // (whose SIGPIPE the spawner ignores).
    ssize_t n = ::send(m_write, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(m_write, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

LineChannel::ReadStatus LineChannel::read_line(std::string& line,
                                               std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    if (auto nl = m_pending.find('\n'); nl != std::string::npos) {
      line = m_pending.substr(0, nl);
      m_pending.erase(0, nl + 1);
      return ReadStatus::line;
    }
    if (m_read < 0) return ReadStatus::eof;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd fd{m_read, POLLIN, 0};
    int n = ::poll(&fd, 1, left.count() < 0 ? 0 : static_cast<int>(left.count()));
    if (n == 0) return ReadStatus::timeout;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadStatus::eof;
    }
    char buf[65536];
    ssize_t got = ::read(m_read, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ReadStatus::eof;
    m_pending.append(buf, static_cast<std::size_t>(got));
  }
}

void LineChannel::close_write() {
  if (m_write < 0) return;
  if (m_write == m_read)
    ::shutdown(m_write, SHUT_WR);
  else
    ::close(m_write);
  m_write = -1;
}

void LineChannel::close() {
  if (m_write >= 0 && m_write != m_read) ::close(m_write);
  if (m_read >= 0) ::close(m_read);
  m_write = m_read = -1;
}

}  // namespace kopt
