#pragma once
// The Nsight Compute adapter: which metrics answer which question, the command line that
// collects them (clocks left alone by default), and reading what ncu left behind.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kopt/core/process.hpp"
#include "kopt/tools/ncu_csv.hpp"

namespace kopt {

// A question the analysis asks, and the smallest metric list that answers it.
struct NcuQuestion {
  std::string id;  // "sol", "memory", ...
  std::string description;
  std::vector<std::string> metrics;   // collected with --metrics
  std::vector<std::string> sections;  // collected with --section (source counters need one)
};
const std::vector<NcuQuestion>& ncu_questions();
// The default questions (all but the source counters, which cost an extra replay pass).
std::vector<std::string> default_ncu_questions();
Expected<std::vector<std::string>> metrics_for_questions(
    const std::vector<std::string>& ids, std::vector<std::string>* sections = nullptr);

struct NcuRequest {
  std::filesystem::path ncu;           // the ncu executable
  std::vector<std::string> questions;  // empty with `set`
  std::optional<std::string> set;      // e.g. "full": ncu's own section set instead
  std::string clock_control = "none";  // "none" (default) or "base"
  std::string kernel_name;             // exact mangled name, or "regex:..."; empty: every kernel
  std::filesystem::path report;        // where the .ncu-rep goes (without extension)
  std::vector<std::string> program;    // the profiled command line
};

// `ncu --clock-control none --kernel-name-base mangled -k NAME --nvtx
//  --nvtx-include regex:kopt-job-[0-9]+/ --metrics ... -o REPORT -f PROGRAM...`: only launches
// made inside a job's NVTX range (ncu_job_range) are profiled; the program (kopt worker
// --once) runs each job's warm-up launches outside it. One session profiles several jobs.
std::vector<std::string> ncu_profile_argv(const NcuRequest& r);

// The union of several kernels' name filters (an exact mangled name, "regex:^(a|b)$", or
// empty: any kernel), for one --kernel-name: empty when one of them is, the one filter when all
// are equal, else one regex of them all.
std::string ncu_kernel_filter_union(const std::vector<std::string>& filters);

// The NVTX push/pop range the one-shot worker runs job `index`'s profiled launches in.
std::string ncu_job_range(std::size_t index);
// The part of a raw-page CSV (ncu --import --csv --page raw of a session with --nvtx) that
// belongs to job `index`: every line that is not a launch (the header, the units row,
// messages) and the launches made inside its range.
std::string ncu_csv_for_job(std::string_view csv, std::size_t index);
// `ncu --import REPORT.ncu-rep --csv --page raw --print-units base`
std::vector<std::string> ncu_import_argv(const std::filesystem::path& ncu,
                                         const std::filesystem::path& report_file);

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
