#pragma once
// `kopt check`: build every selected kernel, run it over several seeds in the worker, and
// compare every output element against the (cached) reference.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/sass_precision.hpp"
#include "kopt/backend/build.hpp"
#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/core/enum_names.hpp"
#include "kopt/core/process.hpp"
#include "kopt/measure/compare.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/tools/sanitizer.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::evaluate {

// One kernel at one point of its params.
struct CheckPoint {
  std::string kernel;
  std::map<std::string, std::int64_t> sets;
};

// CheckOptions::reference_on.
enum class ReferenceOn { automatic, device, files };

}  // namespace kopt::evaluate

namespace kopt {
template <>
struct EnumNames<evaluate::ReferenceOn> {
  static constexpr std::array<std::pair<evaluate::ReferenceOn, std::string_view>, 3> table{
      {{evaluate::ReferenceOn::automatic, "auto"},
       {evaluate::ReferenceOn::device, "device"},
       {evaluate::ReferenceOn::files, "files"}}};
};
}  // namespace kopt

namespace kopt::evaluate {

struct CheckOptions {
  std::vector<std::string> kernels;          // empty: every kernel of the problem
  std::map<std::string, std::int64_t> sets;  // --set NAME=VALUE
  // Checks these instead of `kernels` at `sets` when not empty: one KernelCheck each, in this
  // order, over one set of seeds and references (a tuner's batch of candidates).
  std::vector<CheckPoint> points;
  unsigned jobs = 1;  // builds on up to this many threads (BuildCache::build_all)
  // No kernel at all: the reference's outputs for the seeds, computed or from the cache
  // (CheckReport::reference_files), for a timing job that checks its candidates itself.
  bool reference_only = false;
  int seeds = 3;
  std::uint64_t first_seed = 1;
  // With 2 seeds or more, the last is drawn at run time (std::random_device) instead of
  // first_seed + seeds - 1, and its reference computed afresh, never cached: a kernel cannot
  // carry answers for inputs nobody could know (GPU MODE's secret seeds). kopt check's default.
  bool secret_seed = false;
  // With a secret seed: its inputs and the reference's outputs for them are copied here
  // (CheckReport::secret_input_files, secret_reference_files), for a timing job's secret-seed
  // samples (output_verifier.hpp). Empty: not kept.
  std::filesystem::path secret_dir;
  // With 2 seeds or more: one more seed whose f32/f64 inputs (normal and uniform inits) are drawn
  // k_wide_scale times wider, so that a kernel right for the declared distribution alone (a
  // softmax without its row maximum, right for torch.randn) meets another. Its outputs are
  // compared with atol scaled by how much larger the reference's outputs are there.
  bool wide_seed = true;
  // check_other_shape: also the boundary shapes (problem/boundary_shapes.hpp).
  bool boundary_shapes = true;
  std::optional<std::string> arch;  // --arch; else the device's; else sm_90 without a device
  std::filesystem::path cache_root;
  // False: with no kernel to compare (and not reference_only), a Python reference's outputs
  // stay on the device and come back summarized (CheckReport::reference_outputs): they are
  // neither written nor cached. A KernelBench batch's check: GBs that nothing would read.
  bool keep_reference_outputs = true;
  // With a Python reference and Python kernels only (Triton, an imported ModelNew): each seed's
  // reference outputs are kept on the device by kopt's trusted Python process, as its memory
  // allows, and every kernel's outputs are compared there (python_runner.hpp's device
  // comparison): neither side's outputs are written, cached or read back. A seed whose
  // reference the device had no room for keeps its files, compared on the device all the same.
  bool compare_on_device = true;
  // Where a Python reference's outputs wait for the comparisons of CUDA kernels of kopt's own
  // (a cubin, a solve() library) when compare_on_device: kept on the device by that process,
  // which compares each kernel's outputs there (the executor shares them), or in the reference
  // cache's files, which each kernel's executor reads (a check of them again runs no reference).
  // Automatic: on the device from CheckRun::k_kept_from bytes of outputs, or where the kernels
  // are all Python modules; in files below. Files: in files for Python modules too.
  ReferenceOn reference_on = ReferenceOn::automatic;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// An f32 output against an fp64 reference (the Python reference run in f64, on the first
// seed): a kernel further from it than the f32 reference is, by more than f32 arithmetic
// explains, computes in a lower precision, whatever the tolerance lets through.
struct Fp64Error {
  std::string tensor;
  double rel_l2 = 0;            // the kernel's ||got - f64||_2 / ||f64||_2
  double reference_rel_l2 = 0;  // the f32 reference's own
  double bound = 0;             // max(k_fp64_factor x reference_rel_l2, k_fp64_floor)
  bool passed = true;
};
// A kernel may be this many times further from fp64 than the f32 reference, or this far
// (relative L2: 2^-13, four times tf32's half-ulp and far past what f32 arithmetic of any
// order reaches), whichever is larger.
inline constexpr double k_fp64_factor = 8.0;
inline constexpr double k_fp64_floor = 1.220703125e-4;

inline constexpr double k_wide_scale = 100.0;

struct SeedCheck {
  std::uint64_t seed = 0;
  double input_scale = 1;  // k_wide_scale on the wide seed
  RunStatus status = RunStatus::ok;
  std::string error;
  std::vector<CompareResult> outputs;
  std::vector<std::string> modified_inputs;
  // The outputs compared where they are (on the GPU by the executor, or by kopt's Python
  // process), no byte of them read back; the others were read back and compared here.
  std::vector<std::string> compared_on_device;
  double kernel_ms = 0.0;
  bool passed = false;
};

// lower_precision: its machine code multiplies in a precision below the problem's
// (analysis/sass_precision.hpp); it is not run.
enum class KernelStatus { passed, mismatch, compile_failed, run_failed, not_run, lower_precision };
std::string_view kernel_status_name(KernelStatus s);

}  // namespace kopt::evaluate

namespace kopt {
template <>
struct EnumNames<evaluate::KernelStatus> {
  static constexpr std::array<std::pair<evaluate::KernelStatus, std::string_view>, 6> table{{
      {evaluate::KernelStatus::passed, "passed"},
      {evaluate::KernelStatus::mismatch, "mismatch"},
      {evaluate::KernelStatus::compile_failed, "compile_failed"},
      {evaluate::KernelStatus::run_failed, "run_failed"},
      {evaluate::KernelStatus::not_run, "not_run"},
      {evaluate::KernelStatus::lower_precision, "lower_precision"},
  }};
};
}  // namespace kopt

namespace kopt::evaluate {

struct KernelCheck {
  std::string kernel;
  std::string source;
  ParamPoint point;
  ResolvedLaunch launch;
  Build build;
  ResourceUsage resources;  // the driver's when the kernel ran, else ptxas'
  KernelStatus status = KernelStatus::not_run;
  std::string error;
  std::vector<SeedCheck> seeds;
  // compute-sanitizer's outcomes (kopt check --sanitize; engine/sanitize.hpp); empty: not run.
  std::vector<SanitizerOutcome> sanitizer;
  // The precision its matrix instructions take, read from the machine code of a CUDA kernel
  // or a solve() library; none, with `precision_note` saying why, where it was not read.
  std::optional<PrecisionFinding> precision;
  std::string precision_note;
  std::vector<Fp64Error> fp64;  // its f32 outputs against the fp64 reference, where there is one
  double check_s = 0;  // running it over every seed and comparing its outputs (not the build)
};

// Where a shape other than the declared dims came from.
enum class ShapeOrigin { check_dims, boundary_tails, boundary_ones };
std::string_view shape_origin_name(ShapeOrigin o);  // "[check] dims", "boundary (tails)", ...

struct ShapeCheck {
  ShapeOrigin origin = ShapeOrigin::check_dims;
  std::string dims;                  // the dims that differ: "M=509 N=509 K=509"
  std::vector<std::string> kernels;  // checked there (a kernel with a point: "K BM=64 ...")
  std::vector<std::string> failed;   // of those, the ones wrong there
  std::vector<std::string> held;     // size dims kept at their value, and why
  std::string note;                  // what was not checked there, and why
};

struct CheckReport {
  std::string problem;
  std::string problem_dir;
  std::optional<DeviceInfo> device;
  std::string device_error;  // why nothing ran, when there is no device
  std::string arch;
  std::string toolkit;
  std::string reference_kind;
  bool reference_cached =
      false;  // every seed's reference came from the cache (the secret one never does)
  std::vector<std::uint64_t> seeds;
  std::optional<std::uint64_t> secret_seed;  // the last of `seeds`, drawn at run time
  std::vector<KernelCheck> kernels;
  int worker_starts = 0;
  // reference_only: the first seed's reference outputs (in the cache) and the tolerance each
  // is compared with (ref.py's where it gives one).
  std::map<std::string, std::filesystem::path> reference_files;
  std::map<std::string, Tolerance> reference_tolerances;
  // CheckOptions::secret_dir: the secret seed's input files (inputs and inouts) and the
  // reference's outputs for them, kept there. An input with a recipe (secret_input_draws) is
  // named there but not written: its timer draws it where the kernel runs, or the worker
  // writes the file from the recipe where it reads files (drawn_inputs.hpp).
  std::map<std::string, std::filesystem::path> secret_input_files;
  std::map<std::string, DrawRecipe> secret_input_draws;
  std::map<std::string, std::filesystem::path> secret_reference_files;
  // check_other_shape: the other shape checked ("n=65536"), or why it was not ("" when the
  // problem declares none).
  std::string other_shape;
  std::string other_shape_note;
  // Every other shape the passing kernels were checked at: [check] dims and the boundary
  // shapes (problem/boundary_shapes.hpp), in that order.
  std::vector<ShapeCheck> shape_checks;
  // The fp64 reference: on which seed it was made, or why there is none ("" when the problem
  // has no f32 output or a Python reference).
  std::optional<std::uint64_t> fp64_seed;
  // CheckOptions::wide_seed: the seed whose inputs were drawn wider (none: no float input with
  // a normal or uniform init, or one seed).
  std::optional<std::uint64_t> wide_seed;
  std::string wide_seed_note;  // why there is none where one was asked for (the reference failed)
  std::string fp64_note;
  // CheckOptions::keep_reference_outputs false: each seed's reference outputs as the device
  // counted them (by seed, then output name).
  std::map<std::uint64_t, std::map<std::string, OutputSummary>> reference_outputs;

  // 0 all passed; 1 a candidate failed (a sanitizer finding included); 3 nothing could run
  // (no device), or a sanitizer asked for could not check a kernel that otherwise passed.
  int exit_code() const;
};

// Collaborators are passed in so tests can use fakes for the compiler and process runner.
struct CheckContext {
  Compiler& compiler;
  CommandRunner& runner;
  WorkerClient& worker;
};

// Errors are for the whole command (bad input: exit 2; reference broken; no compiler).
// A candidate that does not compile, faults, hangs or is wrong is a KernelCheck status.
Expected<CheckReport> run_check(const Problem& problem, const CheckOptions& options,
                                CheckContext ctx);

// Other shapes (evaluate/shape_check.cpp): every kernel of `report` that passed is checked once
// more, on seed 1, at the problem's [check] dims and, unless the problem or the options turn
// them off, at its boundary shapes (problem/boundary_shapes.hpp, from each kernel's own
// constraints). One that is wrong there becomes a mismatch: it does not compute the problem at
// other sizes (a shape hard-coded into it). At [check] dims any failure counts; at a derived
// boundary shape a kernel that does not build, or a reference that cannot run there, leaves a
// note instead (the shape is kopt's guess, not the problem's), while a wrong or faulting run
// counts.
Expected<void> check_other_shape(const Problem& problem, const CheckOptions& options,
                                 CheckContext ctx, CheckReport& report);

nlohmann::json to_json(const CheckReport& r);

}  // namespace kopt::evaluate
