#pragma once
// Skips a test, saying why, where no SASS disassembler can be found.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kopt/core/process.hpp"
#include "kopt/tools/tool_probe.hpp"

namespace kopt::test {
inline bool have_disassembler() {
  if (const char* v = std::getenv("KOPT_NVDISASM"); v && *v) return true;
  return find_program("nvdisasm", cuda_tool_dirs()) || find_program("cuobjdump", cuda_tool_dirs());
}
}  // namespace kopt::test

#define KOPT_SKIP_WITHOUT_DISASSEMBLER()  \
  if (!::kopt::test::have_disassembler()) \
  GTEST_SKIP() << "no nvdisasm or cuobjdump (scripts/bootstrap installs nvdisasm from PyPI)"
