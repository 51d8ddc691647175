#pragma once
// The largest value a reading takes while it is watched: a thread reads it every `interval`
// from construction until stop(), as nvidia-smi's sampling does for a device's memory in use.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace kopt {

class PeakWatch {
 public:
  using Read = std::function<std::optional<std::uint64_t>()>;
  PeakWatch(Read read, std::chrono::milliseconds interval);
  ~PeakWatch();
  PeakWatch(const PeakWatch&) = delete;
  PeakWatch& operator=(const PeakWatch&) = delete;

  // Stops the thread after one last reading; the largest reading, or nullopt when none
  // succeeded. Later calls return the same.
  std::optional<std::uint64_t> stop();

 private:
  void sample();
  Read m_read;
  std::chrono::milliseconds m_interval;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::optional<std::uint64_t> m_peak;
  std::thread m_thread;
};

}  // namespace kopt
