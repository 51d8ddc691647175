#pragma once
// The OpenCL backend (docs/architecture.md §2): an Executor for a worker that builds .cl kernels
// with the chosen device's driver, runs, times and measures ceilings. Works on PoCL (OpenCL on the
// CPU) and on GPU vendors' drivers. libOpenCL is loaded at run time.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/build.hpp"
#include "kopt/backend/executor.hpp"

namespace kopt::opencl {

// kopt's OpenCL ordinals: every device of every platform, GPUs first, then CPUs.
struct DeviceSummary {
  int ordinal = 0;
  std::string platform;
  std::string name;
  std::string type;  // "gpu", "cpu", "accelerator"
  std::string version;
  std::string driver;
};
Expected<std::vector<DeviceSummary>> list_opencl_devices();

struct Session;

class OpenclExecutor : public Executor {
 public:
  static Expected<std::unique_ptr<OpenclExecutor>> open(int ordinal);
  ~OpenclExecutor() override;
  Expected<DeviceInfo> device_info() const override;
  RunResult run(const RunJob& job) override;
  BenchResult bench(const BenchJob& job) override;
  CeilingsResult ceilings() override;
  // "OpenCL <device> · <platform> · driver <version>": a different driver is a different build.
  Expected<std::string> toolkit() override;
  // Builds with the device's driver (clBuildProgram), so that a build error shows its log,
  // with the user's file name and lines, at build time. The module holds the source and the
  // options; a run builds it again in its own context.
  Expected<Build> compile(const CompileRequest& request,
                          const std::filesystem::path& module_path) override;

  struct Programs;

 private:
  explicit OpenclExecutor(std::unique_ptr<Session> s);
  std::unique_ptr<Session> m_session;
  std::unique_ptr<Programs> m_programs;  // built modules, by path
};

// A build log with the driver's name for the source ("<source>", "<stdin>", "<kernel>",
// "input.cl") replaced by the user's file name, so "kernel.cl:12:5: error: ..." points home.
std::string rename_source_in_log(const std::string& log, const std::string& file_name);

}  // namespace kopt::opencl
