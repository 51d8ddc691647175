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

// The CUDA backend, whatever else is installed: these tests pin what kopt does with CUDA
// and no GPU (the OpenCL backend has its own tests, label opencl).
class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kopt_binary())) GTEST_SKIP() << "kopt binary not built";
    ::setenv("KOPT_CACHE_DIR", m_cache.path().c_str(), 1);
    ::setenv("KOPT_BACKEND", "cuda", 1);
  }
  void TearDown() override { ::unsetenv("KOPT_BACKEND"); }
  TempDir m_cache{"kopt-cli-cache"};
};

}  // namespace kopt::test
