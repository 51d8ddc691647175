#pragma once
// Where the tests find the kopt executable and the source tree: $KOPT_BINARY and
// $KOPT_SOURCE_DIR when set (a build carried to another machine), else the build's paths.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kopt::test {

inline std::filesystem::path kopt_binary() {
  if (const char* v = std::getenv("KOPT_BINARY"); v && *v) return v;
  return KOPT_BINARY;
}

inline std::filesystem::path source_dir() {
  if (const char* v = std::getenv("KOPT_SOURCE_DIR"); v && *v) return v;
  return KOPT_SOURCE_DIR;
}

}  // namespace kopt::test
