#pragma once
// The kopt binary run as a user runs it, with a private cache, for CLI tests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt::test {

inline CommandResult run_kopt(std::vector<std::string> args) {
  args.insert(args.begin(), kopt_binary().string());
  SystemCommandRunner r;
  return r.run(args, std::chrono::seconds(300));
}

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kopt_binary())) GTEST_SKIP() << "kopt binary not built";
    ::setenv("KOPT_CACHE_DIR", m_cache.path().c_str(), 1);
  }
  TempDir m_cache{"kopt-cli-cache"};
};

}  // namespace kopt::test
