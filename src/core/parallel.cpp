#include "kopt/core/parallel.hpp"

namespace kopt {

unsigned hardware_jobs() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::pair<std::size_t, std::size_t>> split_ranges(std::size_t n, std::size_t parts) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  parts = std::max<std::size_t>(parts, 1);
  std::size_t begin = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    std::size_t size = n / parts + (p < n % parts ? 1 : 0);
    if (size > 0) out.emplace_back(begin, begin + size);
    begin += size;
  }
  return out;
}

}  // namespace kopt
