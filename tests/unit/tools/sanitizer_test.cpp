// The compute-sanitizer adapter: the tools a user may name, the command line, and reading its
// reports, recorded from an H100 (tests/fixtures/sanitizer/README.md), and its refusals.
#include "kopt/tools/sanitizer.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

std::string fixture(const std::string& name) {
  auto text = read_text_file(test::source_dir() / "tests/fixtures/sanitizer" / name);
  EXPECT_TRUE(text) << name;
  return text ? *text : std::string{};
}

CommandResult ran(std::string out, int exit_code) {
  CommandResult r;
  r.started = true;
  r.exit_code = exit_code;
  r.out = std::move(out);
  return r;
}

TEST(SanitizerTools, ListsAreReadAndUnknownNamesRefused) {
  EXPECT_EQ(*parse_sanitizer_tools("memcheck, racecheck"),
            (std::vector<std::string>{"memcheck", "racecheck"}));
  EXPECT_EQ(*parse_sanitizer_tools("all"), sanitizer_tools());
  EXPECT_EQ(*parse_sanitizer_tools("racecheck,racecheck"), (std::vector<std::string>{"racecheck"}));
  auto bad = parse_sanitizer_tools("memcheck,leakcheck");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_NE(bad.error().message.find("'leakcheck'"), std::string::npos);
  EXPECT_FALSE(parse_sanitizer_tools(" , "));
}

TEST(SanitizerTools, TheCommandLineNamesTheToolAndAnExitCodeForFindings) {
  SanitizerRequest r;
  r.sanitizer = "/opt/cuda/bin/compute-sanitizer";
  r.tool = "racecheck";
  r.program = {"/bin/kopt", "worker", "--once", "job.json"};
  auto argv = sanitizer_argv(r);
  ASSERT_GE(argv.size(), 8u);
  EXPECT_EQ(argv[0], "/opt/cuda/bin/compute-sanitizer");
  EXPECT_EQ(argv[1], "--tool");
  EXPECT_EQ(argv[2], "racecheck");
  EXPECT_NE(std::find(argv.begin(), argv.end(), std::to_string(k_sanitizer_error_exit)),
            argv.end());
  EXPECT_EQ(std::vector<std::string>(argv.end() - 4, argv.end()), r.program);
}

TEST(SanitizerOutput, ACleanRunIsClean) {
  auto o = parse_sanitizer_output("memcheck", ran(fixture("memcheck-clean.txt"), 0));
  EXPECT_EQ(o.status, SanitizerStatus::clean) << o.reason;
  EXPECT_TRUE(o.findings.empty());
  EXPECT_TRUE(o.passed());
}

TEST(SanitizerOutput, AnOutOfBoundsReadNamesTheKernelAndTheLine) {
  auto o =
      parse_sanitizer_output("memcheck", ran(fixture("memcheck-oob.txt"), k_sanitizer_error_exit));
  ASSERT_EQ(o.status, SanitizerStatus::findings) << o.reason;
  ASSERT_FALSE(o.findings.empty());
  const SanitizerFinding& f = o.findings[0];
  EXPECT_EQ(f.kind, "Invalid __global__ read of size 4 bytes");
  EXPECT_EQ(f.kernel, "partner_sum_oob");
  EXPECT_EQ(f.location, "kernels.cu:25");
  EXPECT_NE(f.detail.find("out of bounds"), std::string::npos) << f.detail;
  EXPECT_FALSE(o.passed());
}

TEST(SanitizerOutput, ARaceNamesBothAccesses) {
  auto o = parse_sanitizer_output("racecheck",
                                  ran(fixture("racecheck-race.txt"), k_sanitizer_error_exit));
  ASSERT_EQ(o.status, SanitizerStatus::findings) << o.reason;
  ASSERT_FALSE(o.findings.empty());
  const SanitizerFinding& f = o.findings[0];
  EXPECT_EQ(f.kind.rfind("Race reported between", 0), 0u) << f.kind;
  EXPECT_EQ(f.kernel, "partner_sum_racy");
  EXPECT_NE(f.location.find("kernels.cu:"), std::string::npos) << f.location;
  EXPECT_NE(f.detail.find("Read access"), std::string::npos) << f.detail;
}

TEST(SanitizerOutput, WhatCannotCheckIsUnverifiableNeverClean) {
  CommandResult not_started;
  not_started.err = "execv: No such file or directory";
  EXPECT_EQ(parse_sanitizer_output("memcheck", not_started).status, SanitizerStatus::unverifiable);
  // What the tool says on a device it does not support (seen on a gVisor machine).
  auto refused = parse_sanitizer_output(
      "memcheck",
      ran("========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the "
          "\"Supported Devices\" section of the sanitizer documentation\n",
          1));
  EXPECT_EQ(refused.status, SanitizerStatus::unverifiable);
  EXPECT_NE(refused.reason.find("Device not supported"), std::string::npos) << refused.reason;
  // A program that failed before printing any summary: nothing was checked.
  auto failed = parse_sanitizer_output("racecheck", ran("========= COMPUTE-SANITIZER\n", 2));
  EXPECT_EQ(failed.status, SanitizerStatus::unverifiable);
  EXPECT_NE(failed.reason.find("exit code 2"), std::string::npos) << failed.reason;
  CommandResult slow = ran("========= COMPUTE-SANITIZER\n", -1);
  slow.timed_out = true;
  EXPECT_EQ(parse_sanitizer_output("racecheck", slow).status, SanitizerStatus::unverifiable);
}

}  // namespace
}  // namespace kopt
