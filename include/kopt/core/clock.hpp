#pragma once
// Wall-clock time for records.
#include <string>

namespace kopt {

// Now, in UTC, ISO 8601: "2026-11-21T16:02:48Z".
std::string utc_timestamp();

}  // namespace kopt
