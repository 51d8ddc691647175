#pragma once
// Numbers a person reads: 1.23 TB/s, 45.6 TFLOP/s, 12.3 us.
#include <string>

namespace kopt {

std::string human_rate(double per_second, const std::string& unit);
std::string human_time(double seconds);

}  // namespace kopt
