// `kopt worker` (the process that owns a GPU), its one-shot mode `kopt worker --once JOB`
// (what ncu profiles), and `kopt probe-kernel` (for ncu's counter-access probe).
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/cuda/nvtx_range.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/tools/ncu.hpp"
#include "kopt/worker/protocol.hpp"
#include "kopt/worker/worker_loop.hpp"

namespace kopt::cli {

namespace {

// The executor a worker of this device family drives (a CUDA worker runs Python jobs, Triton
// kernels and PyTorch, in a Python child).
Expected<std::unique_ptr<Executor>> open_executor(int device, DeviceFamily family) {
  if (family == DeviceFamily::opencl) {
    auto e = opencl::OpenclExecutor::open(device);
    if (!e) return Unexpected(e.error());
    return std::unique_ptr<Executor>(std::move(*e));
  }
  auto e = cuda::CudaExecutor::open(device);
  if (!e) return Unexpected(e.error());
  return std::unique_ptr<Executor>(std::move(*e));
}

}  // namespace

int run_worker_command(int device, DeviceFamily backend) {
  // A write past the file-size limit ends the worker by SIGXFSZ (the orchestrator ignores it,
  // and this process inherited that): its client then knows the machine's limit ended it,
  // whichever of its libraries (a driver's compiler, its cache) was writing.
  std::signal(SIGXFSZ, SIG_DFL);
  // The protocol gets a private copy of stdout; fd 1 then points at stderr, so a kernel's
  // printf (which writes to fd 1) can never corrupt the protocol stream.
  int protocol_fd = ::dup(1);
  ::dup2(2, 1);
  std::ofstream out("/dev/fd/" + std::to_string(protocol_fd));
  ::close(protocol_fd);
  if (!out) {
    std::cerr << "kopt worker: cannot open the protocol stream\n";
    return 4;
  }
  ExecutorFactory factory = [device, backend] { return open_executor(device, backend); };
  return run_worker_loop(std::cin, out, factory);
}

int run_worker_once_command(int device, DeviceFamily backend,
                            const std::vector<std::string>& job_files, int warmup, int repeat) {
  std::vector<RunJob> jobs;
  for (const auto& file : job_files) {
    auto text = read_text_file(file);
    if (!text) {
      std::cerr << "kopt worker --once: " << text.error().to_string() << "\n";
      return 2;
    }
    try {
      jobs.push_back(run_job_from_json(nlohmann::json::parse(*text)));
    } catch (const std::exception& e) {
      std::cerr << "kopt worker --once: " << file << ": not a run job: " << e.what() << "\n";
      return 2;
    }
  }
  // A Python job (a Triton kernel) runs in a Python child, as in the worker loop; ncu follows
  // it there, and the child opens the job's range itself.
  std::unique_ptr<PythonRunner> python;
  std::unique_ptr<Executor> executor;
  bool failed = false;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const RunJob& job = jobs[j];
    if (is_python(job.kind) && !python) python = std::make_unique<PythonRunner>();
    if (!is_python(job.kind) && !executor) {
      auto opened = open_executor(device, backend);
      if (!opened) {
        std::cerr << "kopt worker --once: " << opened.error().message << "\n";
        return 3;
      }
      executor = std::move(*opened);
    }
    const std::string range = ncu_job_range(j);
    for (int i = 0; i < warmup + repeat; ++i) {
      const bool profiled = i >= warmup;
      RunResult r;
      if (is_python(job.kind)) {
        r = python->run(job, profiled ? range : "");
      } else {
        std::optional<cuda::NvtxRange> in_range;
        if (profiled) in_range.emplace(range);
        r = executor->run(job);
      }
      if (!r.ok()) {  // the other jobs still run: one session profiles them all
        std::cerr << "kopt worker --once: " << job_files[j] << ": launch " << i + 1 << ": "
                  << run_status_name(r.status) << ": " << r.error << "\n";
        failed = true;
        break;
      }
    }
  }
  return failed ? 1 : 0;
}

int run_probe_kernel_command(int device) {
  static const char* source =
      "extern \"C\" __global__ void kopt_probe(float* x, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) x[i] = x[i] * 2.0f + 1.0f;\n"
      "}\n";
  auto executor = cuda::CudaExecutor::open(device);
  if (!executor) {
    std::cerr << "kopt probe-kernel: " << executor.error().message << "\n";
    return 3;
  }
  auto info = (*executor)->device_info();
  if (!info) {
    std::cerr << "kopt probe-kernel: " << info.error().message << "\n";
    return 3;
  }
  TempDir tmp("kopt-probe");
  CompileRequest req;
  req.source_path = "kopt_probe.cu";
  req.source_text = source;
  req.entry = "kopt_probe";
  req.arch = info->arch();
  cuda::NvrtcCompiler compiler;
  auto build = compiler.compile(req, tmp.path() / "probe.cubin");
  if (!build || !build->ok) {
    std::cerr << "kopt probe-kernel: cannot build the probe kernel\n";
    return 3;
  }
  const int n = 1 << 16;
  std::vector<std::byte> zeros(n * sizeof(float));
  if (!write_file_atomic(tmp.path() / "x.bin", zeros)) return 4;
  RunJob job;
  job.module_path = build->cubin_path;
  job.entry = build->lowered_entry;
  job.grid = {n / 256, 1, 1};
  job.block = {256, 1, 1};
  job.args = {ResolvedArg{"x", DType::f32, std::int64_t{0}},
              ResolvedArg{"", DType::i32, std::int64_t{n}}};
  job.tensors = {JobTensor{"x", DType::f32, zeros.size(), Role::inout, tmp.path() / "x.bin",
                           tmp.path() / "y.bin"}};
  RunResult r = (*executor)->run(job);
  if (!r.ok()) {
    std::cerr << "kopt probe-kernel: " << r.error << "\n";
    return 1;
  }
  return 0;
}

namespace {
struct WorkerCliOptions {
  int device = 0;
  std::vector<std::string> once;
  int warmup = 0;
  int repeat = 1;
};
}  // namespace

std::vector<Command> worker_commands(const GlobalRef& g) {
  auto o = std::make_shared<WorkerCliOptions>();
  // A worker drives the family it is started for (evaluate/devices.cpp passes --backend); one
  // started by hand without it owns a CUDA GPU, as it always did.
  auto family = [g] { return g->backend == "opencl" ? DeviceFamily::opencl : DeviceFamily::cuda; };
  Command worker{.path = {"worker"},
                 .help = "internal: the process that owns a GPU",
                 .run =
                     [o, family] {
                       return o->once.empty()
                                  ? run_worker_command(o->device, family())
                                  : run_worker_once_command(o->device, family(), o->once, o->warmup,
                                                            o->repeat);
                     },
                 .internal = true,
                 .tool = false,
                 .storage = o};
  worker.options = {
      {.names = "--device", .help = "device ordinal", .target = &o->device},
      {.names = "--once",
       .help = "run this job file (for ncu; repeatable: in order, each in its NVTX range) instead "
               "of serving the protocol",
       .target = &o->once},
      {.names = "--warmup",
       .help = "with --once: launches of each job before its range",
       .target = &o->warmup,
       .range = {{0, 1000}}},
      {.names = "--repeat",
       .help = "with --once: launches of each job inside its range",
       .target = &o->repeat,
       .range = {{1, 1000}}}};
  auto p = std::make_shared<int>(0);
  Command probe{.path = {"probe-kernel"},
                .help = "internal: launch one tiny kernel (for ncu)",
                .run = [p] { return run_probe_kernel_command(*p); },
                .internal = true,
                .tool = false,
                .storage = p};
  probe.options = {{.names = "--device", .help = "device ordinal", .target = p.get()}};
  return {worker, probe};
}

}  // namespace kopt::cli
