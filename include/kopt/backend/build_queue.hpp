#pragma once
// Builds ahead of need: a pool of threads that takes compile requests in the order they were
// queued and builds them into a BuildCache, while the caller does something else (a tuner
// runs the batch before them on the device). wait() blocks until given requests are built.
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kopt/backend/build_cache.hpp"

namespace kopt {

class BuildQueue {
 public:
  // `compiler` must allow concurrent builds (Compiler::concurrent()).
  BuildQueue(Compiler& compiler, std::filesystem::path cache_dir, unsigned jobs);
  ~BuildQueue();  // drops what is still queued, finishes what is being built
  BuildQueue(const BuildQueue&) = delete;
  BuildQueue& operator=(const BuildQueue&) = delete;

  // Queues the requests not queued before (a failed build is the cache's record, as always).
  void add(const std::vector<CompileRequest>& requests);
  // Until every one of `requests` that was queued is built; returns the seconds waited.
  double wait(const std::vector<CompileRequest>& requests);

 private:
  enum class State { queued, building, done };
  void work();
  std::vector<std::string> keys(const std::vector<CompileRequest>& requests);

  BuildCache m_cache;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<std::pair<std::string, CompileRequest>> m_queue;
  std::map<std::string, State> m_state;
  bool m_stop = false;
  std::vector<std::thread> m_threads;
};

}  // namespace kopt
