#pragma once
// The subcommands; each returns the process exit code (DESIGN.md §4).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kopt::cli {

struct GlobalOptions {
  bool json = false;
  bool verbose = false;
};

struct EnvOptions {
  bool probe_ncu = true;
};
int run_env(const GlobalOptions& g, const EnvOptions& o);

struct CheckCliOptions {
  std::string problem;
  std::vector<std::string> sets;  // NAME=VALUE
  std::vector<std::string> dims;  // NAME=VALUE
  std::vector<std::string> kernels;
  int seeds = 3;
  std::uint64_t first_seed = 1;
  std::optional<std::string> arch;
  double timeout_s = 10.0;
  int device = 0;
};
int run_check_command(const GlobalOptions& g, const CheckCliOptions& o);

int run_worker_command(int device);
int run_probe_kernel_command(int device);

// The running kopt executable, to start workers with.
std::filesystem::path self_executable();

// Prints an error (human or JSON) to the right stream and returns its exit code.
int report_error(const GlobalOptions& g, const std::string& command, int code, const std::string& message);

}  // namespace kopt::cli
