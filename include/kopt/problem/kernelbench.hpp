#pragma once
// KernelBench problems as kopt problems (`kopt import kernelbench`). A KernelBench file
// defines Model, get_inputs() and get_init_inputs(); the Python side
// (python/kopt_kernelbench_import.py) reports what they build, and this turns those facts
// into kopt.toml and ref.py: tensors with shapes over the file's own size constants, inputs
// drawn like get_inputs() draws them, cost formulas for the operators kopt knows, and notes
// where a person has to decide.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

struct ImportedProblem {
  std::string name;
  std::string kopt_toml;
  std::string ref_py;
  std::vector<std::string> notes;  // also written into kopt.toml as comments
  // Python appended to a KernelBench ModelNew file to make it a kernel of this problem:
  // run_kernel(**tensors, **dims) builds ModelNew with Model's init inputs and weights and
  // returns forward's results by output name.
  std::string model_new_adapter;
  // Of the import's wall time, the import process's own start where this file was its first
  // (Python, torch's import, the GPU's context): 0 for a process's later files.
  double process_start_s = 0;
};

// The file of an imported problem's directory that holds its model_new_adapter, for a ModelNew
// evaluated later against it (`kopt import kernelbench DIR --candidates`).
inline constexpr const char* k_model_new_adapter_file = "modelnew_adapter.py";
// The kopt.toml [[kernels]] entry that makes `source` (a ModelNew file with model_new_adapter
// appended) the kernel `name` of the imported problem: its entry is the adapter's run_kernel().
std::string model_new_kernel_toml(const std::string& name, const std::string& source);

// What kopt writes into an import's kopt.toml to say which version of ref.py and the ModelNew
// adapter it generated: a batch keeps an earlier import only when it carries the current one.
// Raise the number whenever what problem_from_kernelbench writes changes how a problem or a
// candidate runs (3: weights reloaded by tensor identity and version, bool arguments; 4: a
// ModelNew's bool arguments made once per job, not in every timed call; 5: the reference's
// model lets kopt's tensors go after each call; 6: the baselines are given empty outputs,
// BASELINE_RETURNS_OUTPUTS).
inline constexpr int k_kernelbench_import_format = 6;
// The line itself, and whether the kopt.toml at `toml` has it.
std::string kernelbench_import_stamp();
bool kernelbench_import_current(const std::string& toml_text);

// `facts` is the import script's JSON; `file_name` the KernelBench file's name (its stem
// names the problem). Bad facts (a bool tensor, an unknown dtype) are bad input.
Expected<ImportedProblem> problem_from_kernelbench(const nlohmann::json& facts,
                                                   const std::string& file_name);

// A tensor's init as a TOML inline table, drawn like the values `stats` describes (min, max,
// mean, std of a sample): integers as a randint over the seen range, a constant as a constant,
// a flat spread as uniform, the rest as a normal; empty when `stats` is.
std::string init_from_stats(const nlohmann::json& stats, const std::string& dtype);

}  // namespace kopt
