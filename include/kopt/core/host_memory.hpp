#pragma once
// How much memory this host can still give a process: Linux's MemAvailable (free memory plus
// what the page cache can drop), or the free pages where /proc says nothing.
#include <cstdint>
#include <string_view>

namespace kopt {

// Bytes; 0 when unknown.
std::int64_t host_memory_available_bytes();
// MemAvailable's bytes in the text of /proc/meminfo; 0 when it is not there.
std::int64_t mem_available_from_meminfo(std::string_view meminfo);

}  // namespace kopt
