#pragma once
// Work spread over threads: parallel_for runs fn(i) for every i in [0, n) on up to `jobs`
// threads (the calling one included), each taking the next index when it is free. It
// returns when every call has returned. fn must not throw (kopt reports with Expected).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

namespace kopt {

// The machine's cores, at least 1 (what --jobs defaults to).
unsigned hardware_jobs();

// [0, n) cut into `parts` contiguous ranges [begin, end) whose sizes differ by at most one,
// the larger first; empty ranges are left out (fewer items than parts).
std::vector<std::pair<std::size_t, std::size_t>> split_ranges(std::size_t n, std::size_t parts);

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
