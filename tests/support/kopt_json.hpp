#pragma once
// Runs the kopt binary with --json and parses what it prints (a test fails on non-JSON).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt::test {

inline nlohmann::json kopt_json(std::vector<std::string> args, int& rc) {
  using namespace std::chrono_literals;
  args.insert(args.begin(), kopt_binary().string());
  args.push_back("--json");
  CommandResult r = SystemCommandRunner().run(args, 600s);
  rc = r.exit_code;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << "\n" << r.err;
    return {};
  }
}

}  // namespace kopt::test
