#pragma once
// Runs the kopt binary with --json and parses what it prints (a test fails on non-JSON).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt::test {

// `err`, where given, gets what kopt wrote to stderr (its log).
inline nlohmann::json kopt_json(std::vector<std::string> args, int& rc,
                                std::string* err = nullptr) {
  using namespace std::chrono_literals;
  args.insert(args.begin(), kopt_binary().string());
  args.push_back("--json");
  CommandResult r = SystemCommandRunner().run(args, 600s);
  rc = r.exit_code;
  if (err) *err = r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    // How kopt ended, where it printed nothing: a signal (killed for memory, a crash) or the limit.
    ADD_FAILURE() << "not JSON: " << e.what() << "\n"
                  << (r.timed_out     ? "kopt ran past the test's limit of 600 s\n"
                      : r.signal != 0 ? "kopt ended by signal " + std::to_string(r.signal) + "\n"
                                      : std::string())
                  << r.out << "\n"
                  << r.err;
    return {};
  }
}

}  // namespace kopt::test
