#include "kopt/core/peak_watch.hpp"

#include <algorithm>

namespace kopt {

PeakWatch::PeakWatch(Read read, std::chrono::milliseconds interval)
    : m_read(std::move(read)), m_interval(interval) {
  sample();  // the first reading before the watched work starts
  m_thread = std::thread([this] {
    std::unique_lock lock(m_mutex);
    while (!m_wake.wait_for(lock, m_interval, [this] { return m_stopping; })) {
      lock.unlock();
      sample();
      lock.lock();
    }
  });
}

PeakWatch::~PeakWatch() {
  stop();
}

void PeakWatch::sample() {
  std::optional<std::uint64_t> v = m_read();
  if (!v) return;
  std::lock_guard lock(m_mutex);
  m_peak = m_peak ? std::max(*m_peak, *v) : *v;
}

std::optional<std::uint64_t> PeakWatch::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
    sample();
  }
  std::lock_guard lock(m_mutex);
  return m_peak;
}

}  // namespace kopt
