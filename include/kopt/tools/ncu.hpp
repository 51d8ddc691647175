#pragma once
// The Nsight Compute adapter: which metrics answer which question, the command line that
// collects them (clocks left alone by default), and reading what ncu left behind.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"
#include "kopt/tools/ncu_csv.hpp"

namespace kopt {

// A question the analysis asks, and the smallest metric list that answers it.
struct NcuQuestion {
  std::string id;           // "sol", "memory", ...
  std::string description;
  std::vector<std::string> metrics;   // collected with --metrics
  std::vector<std::string> sections;  // collected with --section (source counters need one)
};
const std::vector<NcuQuestion>& ncu_questions();
// The default questions (all but the source counters, which cost an extra replay pass).
std::vector<std::string> default_ncu_questions();
Expected<std::vector<std::string>> metrics_for_questions(const std::vector<std::string>& ids,
                                                         std::vector<std::string>* sections = nullptr);

struct NcuRequest {
  std::filesystem::path ncu;                 // the ncu executable
  std::vector<std::string> questions;        // empty with `set`
  std::optional<std::string> set;            // e.g. "full": ncu's own section set instead
  std::string clock_control = "none";        // "none" (default) or "base"
  std::string kernel_name;                   // exact mangled name of the target kernel
  int launch_skip = 0;
  int launch_count = 1;
  std::filesystem::path report;              // where the .ncu-rep goes (without extension)
  std::vector<std::string> program;          // the profiled command line
};

// `ncu --clock-control none --kernel-name-base mangled -k NAME --launch-skip S
//  --launch-count C --metrics ... -o REPORT -f PROGRAM...`
std::vector<std::string> ncu_profile_argv(const NcuRequest& r);
// `ncu --import REPORT.ncu-rep --csv --page raw --print-units base`
std::vector<std::string> ncu_import_argv(const std::filesystem::path& ncu, const std::filesystem::path& report_file);

// Why an ncu run failed, in words a user can act on (permission, no kernel matched, ...).
enum class NcuFailure { none, not_found, no_permission, no_kernel_profiled, program_failed, other };
struct NcuOutcome {
  NcuFailure failure = NcuFailure::none;
  std::string message;
};
NcuOutcome classify_ncu_run(const CommandResult& result);

// The fix for missing counter permission, printed with the error.
std::string ncu_permission_help();

}  // namespace kopt
