#pragma once
// Wall-clock time for records, and the seconds a step took.
#include <chrono>
#include <string>

namespace kopt {

// Now, in UTC, ISO 8601: "2026-11-21T16:02:48Z".
std::string utc_timestamp();

// Seconds from `start` to now, on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace kopt
