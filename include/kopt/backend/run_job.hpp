#pragma once
// One run of a built kernel (or a C++ reference) over tensors stored in files: what the
// orchestrator asks a worker to do, and what comes back. Plain records.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/build.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/problem/tensor_draw.hpp"

namespace kopt {

struct JobTensor {
  std::string name;
  DType dtype = DType::f32;
  std::size_t bytes = 0;
  Role role = Role::input;
  std::filesystem::path input_path;   // inputs and inouts: initial bytes
  std::filesystem::path output_path;  // outputs and inouts: written after the run
  std::vector<std::int64_t> shape;    // for Python, which passes tensors of this shape
  std::string checksum;  // inputs: checksum64 of the file as written (hex); may be empty
  Tolerance tolerance;   // outputs: the checker's, for comparing timed launches' outputs
  // Outputs, in a timing job that also checks (tune's screening): the reference's bytes for
  // these inputs. The golden output is compared with them, the inputs with their checksums.
  std::filesystem::path expected_path;
  // Secret-seed samples (output_verifier.hpp): inputs drawn from a seed chosen at run time,
  // and, for outputs, the reference's bytes for them. Empty: no secret samples.
  std::filesystem::path secret_input_path;
  std::filesystem::path secret_expected_path;
  // Inputs and inouts: how its values are drawn (tensor_draw.hpp). A Python job draws them on
  // its own device and never reads input_path; for any other job the worker writes input_path
  // from it where it is missing (drawn_inputs.hpp). checksum is then draw_token() until a
  // process has the bytes.
  std::optional<DrawRecipe> draw;
  // Inputs of a timing job with secret-seed samples: the secret seed's recipe, which its timer
  // draws where the kernel runs (backend/cuda/device_draw.hpp) or the worker writes to
  // secret_input_path where it is missing (drawn_inputs.hpp).
  std::optional<DrawRecipe> secret_draw;
};

// Where a tensor to compare is: kept on the trusted Python process's device under `key` (a
// check's reference), or in the file `path` (a CUDA kernel's executor reads only these).
struct OutputSource {
  std::string key;
  std::filesystem::path path;
};

// One output of a Python candidate, compared on the device by kopt's trusted Python process
// (python_runner.hpp), or of a CUDA kernel by its executor: with the reference's, and the fp64
// reference's where there is one.
struct OutputComparison {
  std::string name;
  Tolerance tolerance;
  OutputSource expected;
  std::optional<OutputSource> exact;
};

struct RunJob {
  std::string label;  // "softmax/tuned BLOCK=256"
  ModuleKind kind = ModuleKind::cubin;
  std::filesystem::path module_path;
  std::string entry;  // lowered name for a cubin, C symbol for a library
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t shared_mem = 0;
  std::vector<ResolvedArg> args;
  std::vector<JobTensor> tensors;
  std::map<std::string, std::int64_t> scalars;  // dims and params by name (Python calls)
  // A Python reference only: its float tensors given and returned in f64, for the check of
  // an f32 problem's precision against an fp64 reference (the output files hold f64).
  bool in_f64 = false;
  // A Python reference whose outputs nothing reads (a check with no kernel, such as a
  // KernelBench batch's): they stay on the device, and a summary of each comes back
  // (RunResult::outputs) instead of a file of GBs.
  bool summarize_outputs = false;
  // The device comparison of a check (evaluate/check_kernels.cpp). A Python reference keeps its
  // outputs on its device under `keep_outputs` where `keep_margin` bytes stay free beside them
  // (RunResult::kept says whether; else they are written to their files as usual); an fp64
  // reference measures its distance to each f32 output's reference in `exact_of`
  // (RunResult::exact_error). A Python candidate's outputs are compared as `compare` says, where
  // they are: only the summaries cross (RunResult::compared). So are a CUDA kernel's, by its
  // executor, against the files `compare` names (backend/cuda/run_compare.hpp), where it has room;
  // an output it did not compare (an executor that compares none: OpenCL's) comes back as a file.
  std::string keep_outputs;
  std::int64_t keep_margin = 0;
  // Its inputs judged left as drawn by their keyed hashes where they are, before the launch and
  // after it, as a comparison's are (a check's CUDA reference, compared on the device): its
  // executor may then draw them there (backend/cuda/device_draw.hpp) instead of reading files.
  bool hash_inputs = false;
  std::map<std::string, OutputSource> exact_of;
  std::vector<OutputComparison> compare;
};

// What a run's output holds, counted where it was computed (the device), so that no file of it
// needs to exist. Floats' min and max are over the finite elements.
struct OutputSummary {
  std::uint64_t elements = 0;
  std::uint64_t nan = 0;  // a float output's poison is NaN: the elements a run left unwritten
  std::uint64_t inf = 0;
  double min = 0, max = 0;
  std::string checksum;  // of the bytes, position-weighted, as hex: the same bits, the same sum
  double rms = 0;        // over the finite elements, as measure/compare.hpp's rms()
};
nlohmann::json to_json(const OutputSummary& s);
OutputSummary output_summary_from_json(const nlohmann::json& j);

// An output compared on the device (RunJob::compare): what measure/compare.hpp's
// compare_tensors counts, and the relative L2 distance to the fp64 reference (-1: none).
struct DeviceComparison {
  struct Mismatch {
    std::uint64_t flat = 0;
    double got = 0, expected = 0;
  };
  std::uint64_t numel = 0, mismatches = 0, nan = 0, inf = 0, unwritten = 0;
  double max_abs_err = 0, max_rel_err = 0, rel_l2_err = 0;
  std::vector<Mismatch> first;
  double exact_rel_l2 = -1;
};
nlohmann::json to_json(const DeviceComparison& c);
// A double in JSON, which has no infinity nor NaN: those go by name ("Infinity", "-Infinity",
// "NaN"), as the Python worker sends them.
nlohmann::json json_number(double v);
double json_double(const nlohmann::json& v);
DeviceComparison device_comparison_from_json(const nlohmann::json& j);
nlohmann::json to_json(const OutputSource& s);
OutputSource output_source_from_json(const nlohmann::json& j);

// How a run ended. Anything but `ok` makes the candidate a failed one, never a failed tool.
enum class RunStatus {
  ok,
  load_failed,       // the module or function could not be loaded
  launch_failed,     // the launch was refused (e.g. too many resources)
  fault,             // the kernel faulted (illegal address, trap, misaligned access...)
  timeout,           // the watchdog killed the worker
  crash,             // the worker process died
  reference_failed,  // a C++ reference returned non-zero
};
std::string_view run_status_name(RunStatus s);
std::optional<RunStatus> parse_run_status(std::string_view name);

struct RunResult {
  RunStatus status = RunStatus::ok;
  std::string error;   // the driver's words, or how the worker died
  bool fatal = false;  // the worker's context is unusable: it exits after replying
  // kopt's environment failed, not the candidate (its own tensors did not fit on the device
  // beside what its other processes hold): never a verdict; the command says so (exit 3).
  bool environment = false;
  std::map<std::string, std::string> input_checksums;  // of input tensors after the run
  ResourceUsage resources;                             // from the driver (cuFuncGetAttribute)
  double kernel_ms = 0.0;  // one launch, for information (timing is `kopt bench`)
  // A ref.py's module-level atol / rtol (-1: not given).
  double reference_atol = -1, reference_rtol = -1;
  std::map<std::string, OutputSummary> outputs;  // RunJob::summarize_outputs: by output name
  bool kept = false;                             // RunJob::keep_outputs: on the device, no files
  std::map<std::string, double> exact_error;     // RunJob::exact_of: relative L2, by output
  std::map<std::string, DeviceComparison> compared;  // RunJob::compare: by output name
  std::string compared_how;  // how the candidate's outputs reached the comparison, for the log
  bool ok() const { return status == RunStatus::ok; }
};

// After a run: the bytes of each job tensor (as `read` copies them to the host; a failed
// read returns its RunResult) become the input checksums and the output files.
template <class Read>
RunResult collect_tensors(const RunJob& job, RunResult result, Read read);

}  // namespace kopt

#include "kopt/backend/collect_tensors.hpp"
