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
};

// What a run's output holds, counted where it was computed (the device), so that no file of it
// needs to exist. Floats' min and max are over the finite elements.
struct OutputSummary {
  std::uint64_t elements = 0;
  std::uint64_t nan = 0;  // a float output's poison is NaN: the elements a run left unwritten
  std::uint64_t inf = 0;
  double min = 0, max = 0;
  std::string checksum;  // of the bytes, position-weighted, as hex: the same bits, the same sum
};
nlohmann::json to_json(const OutputSummary& s);
OutputSummary output_summary_from_json(const nlohmann::json& j);

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
  bool ok() const { return status == RunStatus::ok; }
};

// After a run: the bytes of each job tensor (as `read` copies them to the host; a failed
// read returns its RunResult) become the input checksums and the output files.
template <class Read>
RunResult collect_tensors(const RunJob& job, RunResult result, Read read);

}  // namespace kopt

#include "kopt/backend/collect_tensors.hpp"
