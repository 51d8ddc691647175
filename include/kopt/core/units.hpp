#pragma once
// Numbers a person reads: 1.23 TB/s, 45.6 TFLOP/s, 12.3 us, 1.5 GiB.
#include <cstdint>
#include <optional>
#include <string>

namespace kopt {

std::string human_rate(double per_second, const std::string& unit);
std::string human_time(double seconds);
// 1.5 GiB, 12.0 MiB.
std::string human_bytes(std::uint64_t bytes);
// The bytes an environment variable gives in GiB ("0.5", "32"): empty where it is unset, empty,
// negative or not a number.
std::optional<std::uint64_t> env_gib(const char* name);

}  // namespace kopt
