#pragma once
// A test whose kopt runs (and the kopt binaries it starts) use a private cache, removed after.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kopt/core/fs.hpp"

namespace kopt::test {

class PrivateCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }
  TempDir m_dir{"kopt-test"};
};

}  // namespace kopt::test
