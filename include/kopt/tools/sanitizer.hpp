#pragma once
// The compute-sanitizer adapter: the command line that runs a program under one of its
// tools (memcheck, racecheck, synccheck, initcheck), and what its report says: each finding
// with the kernel, the kind of error and the source line where the build kept line info.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/enum_names.hpp"
#include "kopt/core/error.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

// The tools kopt runs, in the order it runs them.
const std::vector<std::string>& sanitizer_tools();
// "memcheck,racecheck" -> the tools; an unknown name is bad input naming it.
Expected<std::vector<std::string>> parse_sanitizer_tools(const std::string& list);

struct SanitizerRequest {
  std::filesystem::path sanitizer;  // the compute-sanitizer executable
  std::string tool = "memcheck";
  std::vector<std::string> program;  // the checked command line
};

// `compute-sanitizer --tool T --print-limit 64 --error-exitcode 86 --show-backtrace device
//  [memcheck: --padding 1024] [racecheck: --racecheck-report analysis] PROGRAM...`
std::vector<std::string> sanitizer_argv(const SanitizerRequest& r);
// The exit code the argv gives a run with findings.
inline constexpr int k_sanitizer_error_exit = 86;

struct SanitizerFinding {
  std::string tool;
  std::string kind;      // the report's first line: "Invalid __global__ read of size 4 bytes"
  std::string kernel;    // the kernel it happened in, where the report names one
  std::string location;  // "kernel.cu:27" (file and line) where the build kept line info
  std::string
      detail;     // the rest of the report, joined: threads, address, the other access of a race
  int count = 1;  // identical reports folded into one
};

// What a sanitizer's run (or several tools' runs) found.
enum class SanitizerStatus {
  clean,         // ran, nothing found
  findings,      // errors (or racecheck hazards) reported
  unverifiable,  // could not check (missing, device refused, the program failed before the
                 // kernel ran, timed out): never counted as passed
};

template <>
struct EnumNames<SanitizerStatus> {
  static constexpr std::array<std::pair<SanitizerStatus, std::string_view>, 3> table{{
      {SanitizerStatus::clean, "clean"},
      {SanitizerStatus::findings, "findings"},
      {SanitizerStatus::unverifiable, "unverifiable"},
  }};
};

// What one tool's run found.
struct SanitizerOutcome {
  std::string tool;
  SanitizerStatus status = SanitizerStatus::unverifiable;
  std::vector<SanitizerFinding> findings;
  std::string reason;  // why unverifiable; the summary line otherwise
  std::string output;  // what the tool printed (its report lines, at most ~16 KB)
  bool passed() const { return status == SanitizerStatus::clean; }
};

// Reads compute-sanitizer's report (its lines start with "========="). The run's result
// decides "unverifiable" where the report does not show the tool ran to the end.
SanitizerOutcome parse_sanitizer_output(const std::string& tool, const CommandResult& run);

}  // namespace kopt
