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
#include "kopt/engine/checker.hpp"
#include "kopt/report/explanation_markdown.hpp"

namespace kopt {

struct ProfileRequest {
  std::vector<std::string> kernels;          // empty: every kernel of the problem
  std::map<std::string, std::int64_t> sets;  // the point
  std::vector<std::string> questions;        // default_ncu_questions() when empty
  std::optional<std::string> ncu_set;        // ncu's own set ("full") instead of the questions
  std::string clock_control = "none";
  int launch_skip = 0;
  int launch_count = 1;
  bool check_first = true;
  std::optional<std::string> arch;
  int device = 0;
  std::filesystem::path out_dir;             // one subdirectory per kernel
  std::filesystem::path cache_root;
  std::filesystem::path kopt_executable;     // runs the one-shot worker under ncu
  std::filesystem::path ncu;                 // the ncu executable
  std::string ncu_version;
  double timeout_s = 600;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

struct KernelProfile {
  std::string kernel;
  ParamPoint point;
  // ok | timing_only (a backend without counters: OpenCL) | wrong | compile_failed | run_failed |
  // profile_failed | no_counters (ncu without permission)
  std::string status = "ok";
  std::string error;
  std::optional<Explanation> explanation;
  ProfileProvenance provenance;
  std::filesystem::path dir;
  double ncu_wall_s = 0;  // wall time of the ncu run
  ResourceUsage resources;
};

struct ProfileReport {
  std::string problem;
  DeviceInfo device;
  std::vector<KernelProfile> kernels;
  int exit_code() const;
};

Expected<ProfileReport> run_profile(const Problem& problem, const ProfileRequest& request, CheckContext ctx);

nlohmann::json to_json(const ProfileReport& r);

}  // namespace kopt
