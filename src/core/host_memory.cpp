#include "kopt/core/host_memory.hpp"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace kopt {

std::int64_t mem_available_from_meminfo(std::string_view meminfo) {
  constexpr std::string_view key = "MemAvailable:";
  auto at = meminfo.find(key);
  if (at == std::string_view::npos) return 0;
  auto rest = meminfo.substr(at + key.size());
  auto digits = rest.find_first_of("0123456789");
  if (digits == std::string_view::npos) return 0;
  rest = rest.substr(digits);
  std::int64_t kib = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  if (ec != std::errc{}) return 0;
  return kib * 1024;  // the kernel writes "kB" and means KiB
}

std::int64_t host_memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    if (std::int64_t b = mem_available_from_meminfo(text.str()); b > 0) return b;
  }
  long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

}  // namespace kopt
