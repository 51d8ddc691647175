#pragma once
// Work spread over threads: parallel_for runs fn(i) for every i in [0, n) on up to `jobs`
// threads (the calling one included), each taking the next index when it is free. It
// returns when every call has returned. fn must not throw (kopt reports with Expected).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace kopt {

// The machine's cores, at least 1 (what --jobs defaults to).
unsigned hardware_jobs();

template <class Fn>
void parallel_for(std::size_t n, unsigned jobs, Fn&& fn) {
  const std::size_t threads = std::min<std::size_t>(n, std::max(1u, jobs));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace kopt
