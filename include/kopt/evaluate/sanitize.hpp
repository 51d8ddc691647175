#pragma once
// Runs a checked kernel under compute-sanitizer's tools (`kopt check --sanitize`, and the
// loop's check of a new champion): the worker's one-shot mode runs the kernel once on seed 1's
// inputs under each tool, in a process of its own, so a kernel that faults under the tool
// harms nothing else. What a tool could not check is "unverifiable", never "clean".
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/evaluate/checker.hpp"
#include "kopt/tools/sanitizer.hpp"

namespace kopt::evaluate {

struct SanitizeRequest {
  std::vector<std::string> tools;                  // memcheck, racecheck, synccheck, initcheck
  std::optional<std::filesystem::path> sanitizer;  // compute-sanitizer; nullopt: not found
  std::string missing_reason;                      // why there is none
  std::filesystem::path kopt_executable;           // runs `kopt worker --once` under the tool
  int device = 0;
  double timeout_s = 600;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// What running kernels under compute-sanitizer needs: the tool (or why there is none) and this
// kopt, to run the worker's one-shot mode under it.
SanitizeRequest sanitize_request(CommandRunner& runner, std::vector<std::string> tools, int device);

// Every tool's outcome for one built kernel. A kernel of a backend the tools cannot see
// (OpenCL, Triton) gets "unverifiable" outcomes with the reason.
std::vector<SanitizerOutcome> sanitize_kernel(const Problem& p, const KernelCheck& kc, bool opencl,
                                              const SanitizeRequest& r, CommandRunner& runner);

// The verdict over a kernel's outcomes: findings when any tool found an error, else
// unverifiable when any could not check, else clean; nullopt without outcomes.
std::optional<SanitizerStatus> sanitizer_verdict(const std::vector<SanitizerOutcome>& outcomes);
// One line: "memcheck: Invalid __global__ read of size 4 bytes at kernel.cu:12 (3x); racecheck:
// clean".
std::string sanitizer_summary(const std::vector<SanitizerOutcome>& outcomes);

nlohmann::json to_json(const SanitizerFinding& f);
nlohmann::json to_json(const SanitizerOutcome& o);

}  // namespace kopt::evaluate
