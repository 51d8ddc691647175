#pragma once
// The device-side interface the worker drives; CudaExecutor implements it (and a fake does
// in tests).
#include <functional>
#include <memory>

#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/build.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt {

class Executor {
 public:
  virtual ~Executor() = default;
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
};

using ExecutorFactory = std::function<Expected<std::unique_ptr<Executor>>()>;

}  // namespace kopt
