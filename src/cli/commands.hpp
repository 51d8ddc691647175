#pragma once
// The commands (docs/architecture.md §4): each cmd_*.cpp holds its commands' options, their entry
// in the command table (command_table.hpp) and their handler; this header declares the entries and
// what the handlers share. Each handler returns the process exit code.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "command_table.hpp"
#include "kopt/backend/device_family.hpp"
#include "kopt/core/error.hpp"
#include "kopt/evaluate/evaluator.hpp"
#include "kopt/problem/problem.hpp"
#include "kopt/problem/shape_set.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::cli {

using GlobalRef = std::shared_ptr<GlobalOptions>;

// The table's entries, one function per file of commands.
std::vector<Command> env_commands(const GlobalRef& g);         // env
std::vector<Command> check_commands(const GlobalRef& g);       // check
std::vector<Command> bench_commands(const GlobalRef& g);       // bench, ceilings
std::vector<Command> sass_commands(const GlobalRef& g);        // sass
std::vector<Command> profile_commands(const GlobalRef& g);     // profile, analyze
std::vector<Command> tune_commands(const GlobalRef& g);        // tune
std::vector<Command> optimize_commands(const GlobalRef& g);    // optimize
std::vector<Command> iter_commands(const GlobalRef& g);        // iter *
std::vector<Command> report_commands(const GlobalRef& g);      // report
std::vector<Command> experience_commands(const GlobalRef& g);  // experience *
std::vector<Command> specs_commands(const GlobalRef& g);       // specs, target
std::vector<Command> import_commands(const GlobalRef& g);      // import kernelbench
std::vector<Command> init_commands(const GlobalRef& g);        // init
std::vector<Command> export_commands(const GlobalRef& g);      // export
std::vector<Command> campaign_commands(const GlobalRef& g);    // campaign
std::vector<Command> mcp_commands(const GlobalRef& g);         // mcp
std::vector<Command> worker_commands(const GlobalRef& g);      // worker, probe-kernel (internal)

// What check, bench, sass, profile, tune, optimize and target share: the problem, its kernels,
// a point, a second point, dims, the target architecture and the device.
struct ProblemSelection {
  std::string problem;
  std::vector<std::string> kernels;
  std::vector<std::string> sets;       // NAME=VALUE
  std::vector<std::string> vs;         // NAME=VALUE (bench, sass)
  std::vector<std::string> dims;       // NAME=VALUE
  std::vector<std::string> dim_lists;  // --dims NAME=VALUE,NAME=VALUE (the skills' spelling)
  std::string ref;                     // a bare kernel file's ref.py
  // Set by resolve_bare_files: a kernel file of a user's problem runs only its kernels.
  std::vector<std::string> file_kernels;
  std::optional<std::string> arch;
  int device = 0;
  bool allow_no_kernels = false;  // bench --vs-torch: the PyTorch baselines before any kernel
};
// The table's options of a selection (`vs_help` empty: no --vs).
void add_selection(Command& c, ProblemSelection& sel, const std::string& vs_help = "");

// --verify-on auto|device|host, where outputs are compared (check, bench, tune), bound to
// `target`; parse_verify_on() reads what it holds.
Option verify_on_option(std::string* target);
VerifyOn parse_verify_on(const std::string& choice);

// --set, --vs and --dim parsed, and the problem loaded with the dims applied and its kernels
// chosen for the device family (each by its language: backend/device_family.hpp). A bare
// kernel file (.cu, .cl, .py) as the problem is inferred first (resolve_bare_files), and
// `sel.problem` then names the problem directory.
struct Selected {
  std::map<std::string, std::int64_t> sets, vs, dims;
  Problem problem;
};
Expected<Selected> load_selection(ProblemSelection& sel);

// --dims lists folded into --dim; and where `sel.problem` is a kernel file: the kopt.toml beside
// it when one of its kernels has that source (the selection narrowed to them), else the
// problem inferred from the file, --ref and the dims (written beside it, guesses printed to
// stderr), `sel.problem` then naming the directory.
Expected<void> resolve_bare_files(ProblemSelection& sel);

// NAME=VALUE pairs of --set, --vs and --dim; values are integers (or true/false).
Expected<std::map<std::string, std::int64_t>> parse_assignments(
    const std::vector<std::string>& items, const std::string& flag);

// The device family every command of this process uses: --backend cuda|opencl|auto (or
// $KOPT_BACKEND), resolved on first use (evaluate/devices.hpp).
void set_backend_choice(const std::string& choice);
DeviceFamily device_family();

// A worker on `device` of the command's family, its stderr logged in `log_dir`.
WorkerOptions worker_options(int device, const std::filesystem::path& log_dir);

// "NVIDIA H100 (sm_90, 132 SMs), driver CUDA 13.0", or for OpenCL
// "pthread-skylake (OpenCL cpu, 2 compute units), Portable Computing Language 3.1".
std::string device_summary(const DeviceInfo& d);

// --axis NAME=V1,V2,... and --zip M,N (repeatable) on a command that runs at many shapes.
struct ShapeFlags {
  std::vector<std::string> axes, zips;
};
void add_axes(Command& c, ShapeFlags& flags);

// A command at every shape of the selection (--axis, else kopt.toml's [axes] and [shapes];
// problem/shape_set.hpp), or at its one shape when there are none. `one` runs one shape: it
// prints its text (unless --json) and fills *doc with its JSON document; with no shapes it is
// called with doc null and prints as the command always does. `summarize` makes the summary
// over shapes from the documents ([{shape, label, result}]) and prints it unless --json. The
// exit code is the worst of the shapes'.
using ShapeRun = std::function<int(ProblemSelection&, nlohmann::json* doc)>;
using ShapeSummary = std::function<nlohmann::json(const nlohmann::json& shapes, bool print)>;
int run_over_shapes(const GlobalOptions& g, const std::string& command, ProblemSelection sel,
                    const ShapeFlags& flags, const ShapeRun& one, const ShapeSummary& summarize);
// Candidates measured side by side at one shape (the selection with these dims), with the
// rigour of `max_time_s`: each one's median, or none where it failed or nothing could run there.
std::vector<std::optional<double>> measure_at_shape(
    ProblemSelection sel, const std::vector<std::pair<std::string, std::int64_t>>& dims,
    const std::vector<evaluate::Candidate>& candidates, double max_time_s);

// A shape of run_over_shapes' list as its dims in the axes' order (its label keeps that order;
// its "shape" object is sorted by name).
std::vector<std::pair<std::string, std::int64_t>> shape_dims(const nlohmann::json& shape);

// best / typical / worst / geomean / n of a number over shapes; null when there is none.
nlohmann::json stats_json(const OverShapes& o);

// A throughput goal's choice: times[shape][candidate] (none where not measured there) weighted by
// `weights`; the candidate measured at every shape with the least weighted sum, that sum, and the
// weighted sum of each shape's own best among what was measured there.
struct WeightedChoice {
  std::optional<std::size_t> best;
  double weighted_s = 0, own_best_weighted_s = 0;
};
WeightedChoice weighted_choice(const std::vector<double>& weights,
                               const std::vector<std::vector<std::optional<double>>>& times);

// A shape of run_over_shapes' list as a person reads it: "decode (M=1)", or "M=1 N=4096".
std::string shape_display(const nlohmann::json& shape);
// The summaries of bench (per kernel: median, %SOL and speedup over torch eager per shape, with
// best / typical / worst / geometric mean) and check (per kernel: the shapes it failed at).
nlohmann::json bench_summary(const nlohmann::json& shapes, bool print);
nlohmann::json check_summary(const nlohmann::json& shapes, bool print);

// Prints an error (human or JSON) to the right stream and returns its exit code.
int report_error(const GlobalOptions& g, const std::string& command, int code,
                 const std::string& message);
// One shape of a command at many (run_over_shapes): the error also goes into *doc, and only to
// stderr, where there is a doc (the command prints one JSON document for all shapes).
int report_error(const GlobalOptions& g, const std::string& command, int code,
                 const std::string& message, nlohmann::json* doc);

}  // namespace kopt::cli
