#pragma once
// The subcommands; each returns the process exit code (DESIGN.md §4).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/build.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/core/error.hpp"
#include "kopt/engine/sanitize.hpp"
#include "kopt/problem/problem.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::cli {

struct GlobalOptions {
  bool json = false;
  bool verbose = false;
};

// What check, bench and sass share: the problem, its kernels, a point, a second point, dims.
struct ProblemSelection {
  std::string problem;
  std::vector<std::string> kernels;
  std::vector<std::string> sets;  // NAME=VALUE
  std::vector<std::string> vs;    // NAME=VALUE (bench, sass)
  std::vector<std::string> dims;  // NAME=VALUE
  std::optional<std::string> arch;
  int device = 0;
  bool allow_no_kernels = false;  // bench --vs-torch: the PyTorch baselines before any kernel
};

// --set, --vs and --dim parsed, and the problem loaded with the dims applied.
struct Selected {
  std::map<std::string, std::int64_t> sets, vs, dims;
  Problem problem;
};
Expected<Selected> load_selection(const ProblemSelection& sel);

struct EnvOptions {
  bool probe_ncu = true;
};
int run_env(const GlobalOptions& g, const EnvOptions& o);

struct CheckCliOptions {
  ProblemSelection sel;
  int seeds = 3;
  std::uint64_t first_seed = 1;
  double timeout_s = 10.0;
  bool secret_seed =
      true;  // the last seed drawn at run time (--no-secret-seed: first_seed + seeds - 1)
  bool other_shape =
      true;  // [check] dims: every passing kernel checked at that shape too (--no-other-shape)
  std::string sanitize;  // --sanitize memcheck,racecheck,...: "" runs none
  double sanitize_timeout_s = 600.0;
};
int run_check_command(const GlobalOptions& g, const CheckCliOptions& o);

struct BenchCliOptions {
  ProblemSelection sel;
  std::optional<std::string> vs_kernel;
  std::string mode = "cold";
  std::string flush = "read";
  double max_noise_pct = 0.5;
  std::size_t min_samples = 10;
  double min_time_s = 0.5;
  double max_time_s = 15.0;
  double warmup_s = 0.05;
  double threshold_pct = 1.0;
  bool check_first = true;
  bool blocking = true;
  bool vs_torch = false;
  bool verify_samples = true;
  std::string gpus;  // --gpus all|N,M,...: variants measured one per device (a comparison on one)
  std::string cluster;  // --cluster ray|ray:ADDRESS: one worker per device of a Ray cluster
  bool allow_mixed = false;
};
int run_bench_command(const GlobalOptions& g, const BenchCliOptions& o);

struct CeilingsCliOptions {
  bool refresh = false;
  int device = 0;
};
int run_ceilings_command(const GlobalOptions& g, const CeilingsCliOptions& o);

struct SassCliOptions {
  ProblemSelection sel;
  std::vector<std::string> methods;
  std::optional<std::string> catalog;
};
int run_sass_command(const GlobalOptions& g, const SassCliOptions& o);

// NAME=VALUE pairs of --set, --vs and --dim; values are integers (or true/false).
Expected<std::map<std::string, std::int64_t>> parse_assignments(
    const std::vector<std::string>& items, const std::string& flag);
int run_worker_command(int device, const std::string& backend);
int run_worker_once_command(int device, const std::string& backend,
                            const std::vector<std::string>& job_files, int warmup, int repeat);

struct ProfileCliOptions {
  ProblemSelection sel;
  std::vector<std::string> questions;  // comma lists allowed
  std::optional<std::string> ncu_set;
  std::string clock_control = "none";
  int launch_skip = 0;
  int launch_count = 1;
  std::string out = "kopt-profiles";
  bool check_first = true;
  double timeout_s = 600;
  bool one_session = true;  // --session-per-kernel: one ncu session per kernel
};
int run_profile_command(const GlobalOptions& g, const ProfileCliOptions& o);

struct AnalyzeCliOptions {
  std::string file;
  std::string kernel;
  std::optional<std::string> gpu;
  std::optional<std::string> problem;
};
int run_analyze_command(const GlobalOptions& g, const AnalyzeCliOptions& o);

struct TuneCliOptions {
  ProblemSelection sel;
  std::string strategy = "random";
  std::size_t budget = 30;
  double time_budget_s = 0;
  std::uint64_t seed = 1;
  double max_time_s = 2.0;
  unsigned jobs = 0;       // 0: the machine's cores
  std::size_t batch = 32;  // candidates screened together
  std::size_t screen_samples = 15;
  std::string confirm = "auto";  // auto (the rule), all, or a number: at most that many
  std::string gpus;              // --gpus all|N,M,...: screening split over these devices
  std::string cluster;  // --cluster ray|ray:ADDRESS: one worker per device of a Ray cluster
  bool allow_mixed = false;
};
int run_tune_command(const GlobalOptions& g, const TuneCliOptions& o);

struct OptimizeCliOptions {
  ProblemSelection sel;
  int iterations = 5;
  int branches = 4;
  int patience = 2;
  std::uint64_t seed = 1;
  std::string start_kernel;
  std::string run;  // default kopt-runs/PROBLEM
  bool resume = false;
  double max_time_s = 1.5;
  std::string experience_db;  // default: default_experience_db()
  bool use_experience = true;
  std::string proposer;
  double proposer_timeout_s = 600;
  std::string budget_formula = "headroom";  // headroom | kernelflow
  bool profile_branches = true;             // --no-branch-profiles: only the champion is profiled
  bool sanitize = true;  // memcheck and racecheck on a new champion (--no-sanitize)
  std::string gpus;      // --gpus all|N,M,...: a round's branches measured one per device
  std::string cluster;   // --cluster ray|ray:ADDRESS: one worker per device of a Ray cluster
  bool allow_mixed = false;
};
int run_optimize_command(const GlobalOptions& g, const OptimizeCliOptions& o);

struct IterStepCliOptions {
  std::string step;  // open | branch | close | finalize
  std::string run;
  std::string problem;  // open: for a new run
  std::string file;     // branch
  std::string kernel;
  std::vector<std::string> sets, methods;
  std::string ablates;
  std::string hypothesis;                   // branch: what the author expects and why
  std::vector<std::string> expect;          // branch: METRIC:up|down[:AMOUNT]
  std::string budget_formula = "headroom";  // open: headroom | kernelflow
  std::optional<std::string> arch;
  int device = 0;
  double max_time_s = 1.5;
  bool sanitize = true;  // close: memcheck and racecheck on a new champion (--no-sanitize)
};
int run_iter_step_command(const GlobalOptions& g, const IterStepCliOptions& o);

struct IterMaskCliOptions {
  std::string run;
  std::vector<int> versions;
  std::string reason;
  bool mask = true;
};
int run_iter_mask_command(const GlobalOptions& g, const IterMaskCliOptions& o);

struct ReportCliOptions {
  std::vector<std::string> runs;
  bool html = false;
  bool leaderboard = false;
  std::string out;  // default: the run directory (the leaderboard: stdout only)
};
int run_report_command(const GlobalOptions& g, const ReportCliOptions& o);

struct ExperienceCliOptions {
  std::string action;  // add | recommend | search | list | merge | sync | stats
  std::string db;      // default: default_experience_db()
  std::string family, chip, bottleneck, method, verdict, text, sass, note, by = "method", file,
                                                                           direction;
  std::vector<std::string> params;
  double before_s = 0, after_s = 0;
  std::size_t limit = 50;
};
int run_experience_command(const GlobalOptions& g, const ExperienceCliOptions& o);

// `kopt mcp`: the Model Context Protocol server on stdio.
int run_mcp_command();

struct SpecsCliOptions {
  std::optional<std::string> gpu;
};
int run_specs_command(const GlobalOptions& g, const SpecsCliOptions& o);

struct TargetCliOptions {
  ProblemSelection sel;
  std::optional<std::string> gpu;
  std::optional<std::string> precision;
  std::string out = "target.md";
};
int run_target_command(const GlobalOptions& g, const TargetCliOptions& o);

struct ImportCliOptions {
  std::string file;  // a KernelBench problem (.py), or a folder of them
  std::string out;  // the problem directory to write (a folder: one directory per problem under it)
  bool force = false;
  // A folder only: parallel imports, then each reference run once (--check) and its PyTorch
  // baselines timed (--vs-torch) for --max-time each; the table also written to --report.
  int jobs = 0;
  bool check = false;
  bool vs_torch = false;
  double max_time_s = 1.0;
  std::string report;
  int device = 0;
};
int run_import_kernelbench_command(const GlobalOptions& g, const ImportCliOptions& o);
int run_probe_kernel_command(int device);

// The backend every command of this process uses: `--backend cuda|opencl|auto` (or
// $KOPT_BACKEND); auto picks CUDA when the driver sees a GPU, else OpenCL when a device is
// there, else CUDA (whose errors then say what is missing). Resolved on first use.
enum class Backend { cuda, opencl, triton };
void set_backend_choice(const std::string& choice);
Backend active_backend();
// Under `--backend auto` on a CUDA machine, a problem whose kernels are all Triton (.py) runs
// on the Triton backend (the same GPU); an explicit choice is left alone.
void prefer_backend_of(const Problem& p);
std::string_view backend_name(Backend b);
KernelLanguage backend_language(Backend b);
// Whether the active backend sees a device (an environment Error that says why not).
Expected<void> backend_device_present();
// --gpus: "" (the --device alone), "all", or "N,M,...": ordinals of the active backend's
// devices; a device that does not exist or one named twice is bad input.
Expected<std::vector<int>> select_devices(const std::string& gpus, int default_device);
// The active backend's compiler for `device`.
std::unique_ptr<Compiler> make_compiler(WorkerClient& worker);

// "NVIDIA H100 (sm_90, 132 SMs), driver CUDA 13.0", or for OpenCL
// "pthread-skylake (OpenCL cpu, 2 compute units), Portable Computing Language 3.1".
std::string device_summary(const DeviceInfo& d);

// The running kopt executable, to start workers with.
std::filesystem::path self_executable();
// A worker on `device` (of the active backend unless one is named), its stderr logged in `log_dir`.
WorkerOptions worker_options(int device, const std::filesystem::path& log_dir,
                             std::optional<Backend> backend = std::nullopt);

// What running kernels under compute-sanitizer needs: the tool (or why there is none) and
// this kopt to run the worker's one-shot mode under it.
SanitizeRequest sanitize_request(CommandRunner& runner, std::vector<std::string> tools, int device);

// Prints an error (human or JSON) to the right stream and returns its exit code.
int report_error(const GlobalOptions& g, const std::string& command, int code,
                 const std::string& message);

}  // namespace kopt::cli
