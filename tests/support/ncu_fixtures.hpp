#pragma once
// Recorded ncu output (tests/fixtures/ncu/README.md), parsed for tests.
#include <gtest/gtest.h>

#include <string>

#include "kopt/core/fs.hpp"
#include "kopt/tools/ncu_csv.hpp"
#include "kopt_binary.hpp"

namespace kopt::test {

inline std::string ncu_fixture_text(const std::string& name) {
  auto text = read_text_file(source_dir() / "tests/fixtures/ncu" / name);
  EXPECT_TRUE(text) << name;
  return text ? *text : std::string{};
}

inline NcuKernelProfile ncu_fixture_kernel(const std::string& name) {
  auto report = parse_ncu_csv(ncu_fixture_text(name), name);
  EXPECT_TRUE(report) << (report ? "" : report.error().to_string());
  if (!report) return {};
  auto k = select_kernel(*report, "");
  EXPECT_TRUE(k);
  return k ? *k : NcuKernelProfile{};
}

}  // namespace kopt::test
