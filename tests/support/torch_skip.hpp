#pragma once
// Skips a test, saying why, where kopt's Python has no torch (CI installs Debian's
// python3-torch, so these tests run there for real, with references on the CPU).
#include <gtest/gtest.h>

#include <chrono>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/process.hpp"

namespace kopt::test {
inline bool python_has_torch() {
  static const bool has =
      ::kopt::SystemCommandRunner()
          .run({::kopt::python_executable(), "-c", "import torch, numpy"}, std::chrono::seconds(60))
          .ok();
  return has;
}
}  // namespace kopt::test

#define KOPT_SKIP_WITHOUT_TORCH()                               \
  if (!::kopt::test::python_has_torch())                        \
  GTEST_SKIP() << "no torch in " << ::kopt::python_executable() \
               << " (apt-get install python3-torch, or set KOPT_PYTHON)"
