#pragma once
// Lines of text both ways over a pair of file descriptors (a child's pipes) or one (a connected
// socket): what Subprocess and a fork server's child (core/fork_server.hpp) speak.
#include <chrono>
#include <string>

namespace kopt {

class LineChannel {
 public:
  enum class ReadStatus { line, eof, timeout };

  LineChannel() = default;
  // Owns both descriptors (the same one twice for a socket) and closes them.
  LineChannel(int write_fd, int read_fd) : m_write(write_fd), m_read(read_fd) {}
  LineChannel(LineChannel&& other) noexcept;
  LineChannel& operator=(LineChannel&& other) noexcept;
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;
  ~LineChannel() { close(); }

  // One line, a newline appended. False when the other side is gone.
  bool write_line(const std::string& line);
  // One line, waiting at most `timeout`.
  ReadStatus read_line(std::string& line, std::chrono::milliseconds timeout);
  // The other side reads EOF; a socket stays open for reading.
  void close_write();
  void close();

 private:
  int m_write = -1;
  int m_read = -1;
  std::string m_pending;
};

}  // namespace kopt
