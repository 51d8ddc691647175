#pragma once
// `kopt profile`: check a kernel, run it once in the worker's one-shot mode under ncu
// (only the metrics the analysis asks for, clocks left alone), keep the .ncu-rep and the raw
// CSV, and explain it: roofline, gaps, bottleneck. Without counter access the analysis falls
// back to timing and static facts, and says so.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/explanation.hpp"
#include "kopt/core/enum_names.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/report/explanation_markdown.hpp"

namespace kopt::evaluate {

// What became of one kernel's profile.
enum class ProfileStatus {
  ok,
  timing_only,  // a backend without counters (OpenCL): timing and static facts
  wrong,        // its check failed: not profiled
  compile_failed,
  run_failed,
  profile_failed,  // ncu did not give a profile of it
  no_counters,     // ncu without permission to read the counters: timing and static facts
};

}  // namespace kopt::evaluate

namespace kopt {
template <>
struct EnumNames<evaluate::ProfileStatus> {
  static constexpr std::array<std::pair<evaluate::ProfileStatus, std::string_view>, 7> table{{
      {evaluate::ProfileStatus::ok, "ok"},
      {evaluate::ProfileStatus::timing_only, "timing_only"},
      {evaluate::ProfileStatus::wrong, "wrong"},
      {evaluate::ProfileStatus::compile_failed, "compile_failed"},
      {evaluate::ProfileStatus::run_failed, "run_failed"},
      {evaluate::ProfileStatus::profile_failed, "profile_failed"},
      {evaluate::ProfileStatus::no_counters, "no_counters"},
  }};
};
}  // namespace kopt

namespace kopt::evaluate {

struct ProfileRequest {
  std::vector<std::string> kernels;          // empty: every kernel of the problem
  std::map<std::string, std::int64_t> sets;  // the point
  std::vector<std::string> questions;        // default_ncu_questions() when empty
  std::optional<std::string> ncu_set;        // ncu's own set ("full") instead of the questions
  std::string clock_control = "none";
  int launch_skip = 0;  // launches of each kernel before its profiled ones (outside its NVTX range)
  int launch_count = 1;  // launches profiled (averaged)
  bool check_first = true;
  std::optional<std::string> arch;
  int device = 0;
  std::filesystem::path out_dir;  // one subdirectory per kernel
  std::filesystem::path cache_root;
  std::filesystem::path kopt_executable;  // runs the one-shot worker under ncu
  std::filesystem::path ncu;              // the ncu executable
  std::string ncu_version;
  double timeout_s = 600;  // per kernel: a session of N kernels may take N times as long
  // Every kernel in one ncu session (one start-up of ncu and of the worker, each kernel's
  // launches told apart by NVTX ranges); false: one session per kernel.
  bool one_session = true;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

struct KernelProfile {
  std::string kernel;
  ParamPoint point;
  ProfileStatus status = ProfileStatus::ok;
  std::string error;
  std::optional<Explanation> explanation;
  ProfileProvenance provenance;
  std::filesystem::path dir;
  double ncu_wall_s = 0;    // wall time of the ncu session it was profiled in
  int session_kernels = 0;  // how many kernels that session profiled (0: none ran)
  ResourceUsage resources;
};

struct ProfileReport {
  std::string problem;
  DeviceInfo device;
  std::vector<KernelProfile> kernels;
  int exit_code() const;
};

Expected<ProfileReport> run_profile(const Problem& problem, const ProfileRequest& request,
                                    CheckContext ctx);

// One kernel at one point, of its own problem (a branch's source replaces the kernel's), its
// files written to `dir`.
struct ProfileItem {
  const Problem* problem = nullptr;
  std::string kernel;
  std::map<std::string, std::int64_t> sets;
  std::filesystem::path dir;
};
// Several kernels checked, then profiled in one ncu session (request.one_session), which
// writes its report and log to `session_dir`: the loop's branches of one round. A kernel that
// fails its check or its profile has that status; the others are still profiled. One
// KernelProfile per item, in order.
Expected<std::vector<KernelProfile>> run_profile_items(const std::vector<ProfileItem>& items,
                                                       const ProfileRequest& request,
                                                       CheckContext ctx,
                                                       const std::filesystem::path& session_dir);

nlohmann::json to_json(const ProfileReport& r);

}  // namespace kopt::evaluate
