#include "kopt/backend/build_queue.hpp"

#include <chrono>

namespace kopt {

BuildQueue::BuildQueue(Compiler& compiler, std::filesystem::path cache_dir, unsigned jobs)
    : m_cache(compiler, std::move(cache_dir)) {
  for (unsigned i = 0; i < std::max(1u, jobs); ++i) m_threads.emplace_back([this] { work(); });
}

BuildQueue::~BuildQueue() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    m_queue.clear();
  }
  m_changed.notify_all();
  for (auto& t : m_threads) t.join();
}

std::vector<std::string> BuildQueue::keys(const std::vector<CompileRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests)
    if (auto k = m_cache.key(r))
      out.push_back(*k);  // no key: the compiler is missing, the caller's build says so
  return out;
}

void BuildQueue::add(const std::vector<CompileRequest>& requests) {
  auto ks = keys(requests);
  {
    std::lock_guard lock(m_mutex);
    for (std::size_t i = 0; i < ks.size() && i < requests.size(); ++i)
      if (m_state.emplace(ks[i], State::queued).second) m_queue.emplace_back(ks[i], requests[i]);
  }
  m_changed.notify_all();
}

double BuildQueue::wait(const std::vector<CompileRequest>& requests) {
  auto ks = keys(requests);
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] {
    for (const auto& k : ks)
      if (auto it = m_state.find(k); it != m_state.end() && it->second != State::done) return false;
    return true;
  });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BuildQueue::work() {
  while (true) {
    std::pair<std::string, CompileRequest> job;
    {
      std::unique_lock lock(m_mutex);
      m_changed.wait(lock, [&] { return m_stop || !m_queue.empty(); });
      if (m_stop) return;
      job = std::move(m_queue.front());
      m_queue.pop_front();
      m_state[job.first] = State::building;
    }
    (void)m_cache.build(
        job.second);  // the result is in the cache, where the batch's own build finds it
    {
      std::lock_guard lock(m_mutex);
      m_state[job.first] = State::done;
    }
    m_changed.notify_all();
  }
}

}  // namespace kopt
