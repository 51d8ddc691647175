#pragma once
// Adapters that ask external programs what they are: nvcc, ncu, cuobjdump, nvdisasm,
// compute-sanitizer, python3 (torch, triton). Missing tools are facts, never errors.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"

namespace kopt {

struct ToolInfo {
  std::string name;
  bool found = false;
  std::string path;
  std::string version;
  std::string note;  // why not found, or a caveat
};

// Directories searched after $PATH: $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin.
std::vector<std::filesystem::path> cuda_tool_dirs();

// Runs `<tool> --version` and extracts the version with the tool's known pattern.
ToolInfo probe_tool(CommandRunner& runner, const std::string& name);
// Pulls a version out of a tool's --version text ("V13.0.88", "Version 2025.3.1.0").
std::string parse_tool_version(const std::string& name, const std::string& text);

struct PythonInfo {
  ToolInfo python;
  std::string torch;       // version, or "" when missing
  std::string torch_cuda;  // torch.version.cuda
  std::string triton;
  std::string note;
};
PythonInfo probe_python(CommandRunner& runner);

// Whether ncu can read hardware counters, decided from the output of a tiny profile.
enum class CounterAccess { ok, no_permission, failed, not_tried };
struct NcuProbe {
  CounterAccess access = CounterAccess::not_tried;
  std::string detail;
};
NcuProbe classify_ncu_probe(const CommandResult& result);
std::string_view counter_access_name(CounterAccess a);

nlohmann::json to_json(const ToolInfo& t);

}  // namespace kopt
