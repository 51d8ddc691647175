#pragma once
// Numbers a person reads: 1.23 TB/s, 45.6 TFLOP/s, 12.3 us, 1.5 GiB.
#include <cstdint>
#include <string>

namespace kopt {

std::string human_rate(double per_second, const std::string& unit);
std::string human_time(double seconds);
// 1.5 GiB, 12.0 MiB.
std::string human_bytes(std::uint64_t bytes);

}  // namespace kopt
