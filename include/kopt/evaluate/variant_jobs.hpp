#pragma once
// Shared by check and bench: turning a problem's kernel at a parameter point into a compile
// request and a RunJob, and writing a seed's inputs to files the worker reads.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kopt/backend/build.hpp"
#include "kopt/backend/run_job.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/problem/param_space.hpp"

namespace kopt::evaluate {

CompileRequest compile_request(const Problem& p, const KernelSpec& k, const ParamPoint& point,
                               const std::string& arch);

// One seed's inputs, shared by the reference and every kernel. With InputFiles::on_demand
// they are recipes (tensor_draw.hpp) and planned paths: a Python job draws them on its device,
// the worker writes a file for any other job that needs one (drawn_inputs.hpp), and the
// checksums are draw tokens. With InputFiles::now the files are written here (for tools
// that read them outside a worker: ncu, compute-sanitizer).
enum class InputFiles { now, on_demand };
struct SeedInputs {
  std::uint64_t seed = 0;
  std::map<std::string, std::filesystem::path> files;       // input and inout tensors
  std::map<std::string, std::string> checksums;             // input tensors
  std::map<std::string, std::vector<std::int64_t>> shapes;  // every tensor
  std::map<std::string, DrawRecipe> draws;                  // input and inout tensors
};
Expected<SeedInputs> write_seed_inputs(const Problem& p, std::uint64_t seed,
                                       const std::filesystem::path& dir,
                                       InputFiles files = InputFiles::on_demand);

std::vector<JobTensor> job_tensors(const Problem& p, const SeedInputs& in,
                                   const std::filesystem::path& out_dir);

// The job that runs a built kernel with its launch over a seed's inputs.
RunJob kernel_job(std::string label, const Build& build, const ResolvedLaunch& launch,
                  std::vector<JobTensor> tensors);

}  // namespace kopt::evaluate
