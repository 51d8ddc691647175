#pragma once
// The device-side interface the worker drives; CudaExecutor implements it (and a fake does
// in tests).
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/build.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt {

// kopt's trusted Python process comparing a run's outputs with the reference's it keeps on the
// device (a RunJob::compare whose OutputSource has a key): `outputs` names each output's memory,
// {handle, offset} of a CUDA IPC handle of the executor's, or {path} of its file; it fills
// result.compared, or fails as kopt's environment (result.status, error, environment). False,
// and nothing filled, where that process could not open what was shared: the outputs then go
// through their files. The worker gives one to its executor (worker_loop.cpp).
using KeptComparer =
    std::function<bool(const RunJob& job, const nlohmann::json& outputs, RunResult& result)>;

class Executor {
 public:
  virtual ~Executor() = default;
  // Where a job's reference is kept in kopt's Python process: its comparer. Without one, such
  // an output comes back as a file, as any output not compared.
  void set_kept_comparer(KeptComparer c) { m_kept_comparer = std::move(c); }
  virtual Expected<DeviceInfo> device_info() const = 0;
  virtual RunResult run(const RunJob& job) = 0;
  // Whether run(job) draws the job's seeded inputs itself, where they are used: the worker then
  // writes no file for them (DrawnFiles). Others read the files.
  virtual bool draws_inputs(const RunJob&) { return false; }
  virtual BenchResult bench(const BenchJob& job) = 0;
  // The same for bench(job): its variants' inputs and its secret seed's drawn where they are
  // timed, none read from a file.
  virtual bool draws_inputs(const BenchJob&) { return false; }
  virtual CeilingsResult ceilings() = 0;
  // A backend whose builds need the device's own driver (OpenCL) builds in the worker, so
  // that the orchestrator holds no device context and a crashing compiler is a failed
  // candidate: the toolkit (part of every cache key) and the build. Others build nothing here.
  virtual Expected<std::string> toolkit() {
    return Unexpected(internal_error("this worker builds nothing"));
  }
  virtual Expected<Build> compile(const CompileRequest&, const std::filesystem::path&) {
    return Unexpected(internal_error("this worker builds nothing"));
  }

 protected:
  KeptComparer m_kept_comparer;
};

using ExecutorFactory = std::function<Expected<std::unique_ptr<Executor>>()>;

}  // namespace kopt
