#pragma once
// The orchestrator's side: starts a worker process, sends it jobs, and survives it. A job
// whose worker crashes or stops answering (watchdog) becomes a failed RunResult; the worker
// is killed and a fresh one is started for the next job.
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/build.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/backend/run_job.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

struct WorkerOptions {
  std::vector<std::string> command;  // argv that starts a worker, e.g. {kopt, "worker"}
  std::chrono::milliseconds job_timeout{10000};
  std::chrono::milliseconds start_timeout{60000};  // first contact (driver start-up is slow)
  std::filesystem::path log_path;  // the worker's stderr (device printf lands here too)
};

// Whether a dead worker's last words say the machine refused a write (a full disk, a quota,
// the file-size limit): kopt's environment, never the job's verdict.
bool machine_out_of_room(const std::string& last_words);

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // The device, as the worker sees it; an Error (environment) when it has none.
  Expected<DeviceInfo> device_info();
  // Runs a job; never fails as a C++ call: a dead or hung worker is a RunResult.
  RunResult run(const RunJob& job);
  // Times a kernel (or two, interleaved); the watchdog allows the job's time cap plus the
  // warm-up and a margin. A dead or hung worker is a BenchResult with that status.
  BenchResult bench(const BenchJob& job);
  // Measures the device's ceilings (copy bandwidth, FMA, tensor-core GEMM).
  Expected<CeilingsResult> ceilings(std::chrono::milliseconds timeout);
  // A build in the worker (OpenCL: the device's driver compiles). A compiler that crashes or
  // hangs the worker is a Build with ok == false and the reason, not an Error.
  Expected<std::string> toolkit();
  Expected<Build> compile(const CompileRequest& request, const std::filesystem::path& module_path);
  // Starts the worker's Python process ahead of its first job (torch imported, the GPU's
  // context made; with `compile`, torch.compile's compiler loaded and tried once), so that a
  // caller with other work to do first (imports) does not wait for it later. An Error where it
  // cannot start: the first job then says why.
  Expected<void> warm_python(bool compile);
  // The device memory of the worker's Python processes (PythonRunner::memory): peaks since the
  // last call by kind of request; `reset` starts the count again.
  Expected<nlohmann::json> python_memory(bool reset);
  // How many workers were started (1 + restarts).
  int starts() const { return m_starts; }
  // The start whose process is running now (starts()), or 0 where none is: what a worker's
  // processes keep on the device lives as long as that start.
  int running_start() const { return m_process.running() ? m_starts : 0; }

 private:
  struct Reply {
    std::optional<nlohmann::json> message;  // set when the worker answered
    RunStatus failure = RunStatus::crash;   // when it did not: crash or timeout
    std::string detail;
    // It died of a limit of the machine's (Subprocess::ended_by_a_limit): not the job's fault.
    bool environment = false;
  };
  Expected<void> ensure_started();
  // A request whose answer is the reply itself: a dead or hung worker is an internal error
  // (`what` failed), a refusal the worker's own error.
  Expected<nlohmann::json> ask(const nlohmann::json& req, std::chrono::milliseconds timeout,
                               const std::string& what);
  template <class Result, class Parse>
  Result call(const nlohmann::json& req, std::chrono::milliseconds timeout, Parse parse);
  Reply request(const nlohmann::json& req, std::chrono::milliseconds timeout);
  std::string log_tail() const;

  WorkerOptions m_options;
  Subprocess m_process;
  int m_starts = 0;
};

// A Compiler that builds in a worker (the OpenCL backend's): the orchestrator holds no device
// context, and a crash in the driver's compiler is the candidate's failure, not kopt's.
class WorkerCompiler final : public Compiler {
 public:
  explicit WorkerCompiler(WorkerClient& worker) : m_worker(worker) {}
  Expected<std::string> toolkit() override;
  Expected<Build> compile(const CompileRequest& request,
                          const std::filesystem::path& module_path) override {
    return m_worker.compile(request, module_path);
  }

 private:
  WorkerClient& m_worker;
  std::optional<std::string> m_toolkit;  // asked once: it keys every cached build
};

}  // namespace kopt
