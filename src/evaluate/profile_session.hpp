#pragma once
// One ncu session over several checked kernels (profiler.hpp): the one-shot worker runs their
// jobs in order, each kernel's profiled launches inside its own NVTX range, and the report is
// split by range, one analysis per kernel.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kopt/evaluate/ceilings_store.hpp"
#include "kopt/evaluate/profiler.hpp"

namespace kopt::evaluate::profile_detail {

// A kernel ready for a session: its job file, and ncu's name filter for its launches.
struct Staged {
  std::size_t profile = 0;  // its KernelProfile's index
  const Problem* problem = nullptr;
  KernelCheck check;
  // The exact mangled name, "regex:^(a|b)$" (a Triton kernel's @triton.jit functions), or
  // empty: any kernel (a solve() library's, whose names kopt does not know).
  std::string filter;
  std::filesystem::path job_file;
};

// What the analysis is told besides the counters: the device, the roofs, the problem's cost.
ExplainInputs explain_inputs(const Problem& p, const DeviceInfo& device,
                             const std::optional<StoredCeilings>& c);
// The profile did not come about: `status` (compile_failed, wrong, profile_failed, ...) and why.
void fail(KernelProfile& kp, ProfileStatus status, const std::string& error);
// summary.md, details.md and analysis.json in the profile's folder.
void write_profile_files(const KernelProfile& kp);

struct SessionContext {
  const ProfileRequest& request;
  CheckContext ctx;
  const DeviceInfo& device;
  const std::optional<StoredCeilings>& ceilings;
};

// No counters (no permission, or a backend without a counter profiler): time from the
// check's run and the static facts, and say so.
void degrade(const Problem& p, const KernelCheck& kc, const SessionContext& sc, KernelProfile& kp,
             ProfileStatus status, const std::string& why);

// Profiles `batch` in one ncu session whose report and log go to `session_dir`; fills each
// one's KernelProfile in `profiles`.
void run_session(const std::vector<Staged>& batch, std::vector<KernelProfile>& profiles,
                 const SessionContext& sc, const std::filesystem::path& session_dir);

}  // namespace kopt::evaluate::profile_detail
