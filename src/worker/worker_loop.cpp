#include "kopt/worker/worker_loop.hpp"

#include <unistd.h>

#include <istream>
#include <new>
#include <ostream>

#include "kopt/backend/cpu_reference.hpp"
#include "kopt/backend/drawn_inputs.hpp"
#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/host_memory.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt {
using nlohmann::json;

int run_worker_loop(std::istream& in, std::ostream& out, const ExecutorFactory& make_executor) {
  std::unique_ptr<Executor> executor;
  std::optional<Error> executor_error;
  auto get_executor = [&]() -> Executor* {
    if (!executor && !executor_error) {
      auto e = make_executor();
      if (e)
        executor = std::move(*e);
      else
        executor_error = e.error();
    }
    return executor.get();
  };
  // Python jobs (ref.py, Triton, PyTorch baselines) go to a Python child, started on first
  // use, whose stderr is the worker's (its log); its cold-cache flush is twice the device's
  // L2 when the device is known.
  std::unique_ptr<PythonRunner> python;
  auto get_python = [&]() -> PythonRunner& {
    if (!python) {
      python = std::make_unique<PythonRunner>();
      if (Executor* ex = get_executor())
        if (auto info = ex->device_info(); info) {
          if (info->l2_bytes > 0) python->set_default_flush_bytes(2 * info->l2_bytes);
          // The Python processes on this worker's GPU, not the first one (--device, --gpus).
          if (info->backend == "cuda") python->set_device(info->uuid);
        }
    }
    return *python;
  };
  // A CUDA kernel's outputs compared where a ref.py's outputs are kept: by the Python child.
  const KeptComparer kept_comparer = [&](const RunJob& job, const json& outputs, RunResult& r) {
    return get_python().compare_kept(job, outputs, r);
  };
  auto reply = [&](const json& j) { out << j.dump() << '\n' << std::flush; };
  auto refuse = [&](const Error& e) {
    reply({{"ok", false}, {"error", e.message}, {"exit_code", exit_code(e.kind)}});
  };
  // The executor, or nullptr once the refusal (no device) has been sent.
  auto ready_executor = [&]() -> Executor* {
    Executor* ex = get_executor();
    if (!ex) refuse(*executor_error);
    return ex;
  };

  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json req;
    std::string op;
    try {
      req = json::parse(line);
      op = req.at("op").get<std::string>();
    } catch (const json::exception& e) {
      refuse(internal_error(std::string("bad request: ") + e.what()));
      continue;
    }
    // kopt's own allocations (drawn inputs, tensors read back, a reference's buffers) that the
    // host has no room for: the machine's failure, said as one; the worker goes on.
    try {
      if (op == "hello") {
        reply({{"ok", true}, {"protocol", k_protocol_version}, {"pid", ::getpid()}});
      } else if (op == "shutdown") {
        reply({{"ok", true}});
        return 0;
      } else if (op == "device_info") {
        Executor* ex = ready_executor();
        if (!ex) continue;
        auto info = ex->device_info();
        if (!info) {
          refuse(info.error());
          continue;
        }
        info->host_memory_available_bytes = host_memory_available_bytes();  // now, not at open
        reply({{"ok", true}, {"device", to_json(*info)}});
      } else if (op == "warm_python") {
        if (std::string why = get_python().warm(req.value("compile", false)); !why.empty())
          refuse(environment_error(why));
        else
          reply({{"ok", true}});
      } else if (op == "python_memory") {
        reply({{"ok", true}, {"memory", get_python().memory(req.value("reset", false))}});
      } else if (op == "run") {
        RunJob job;
        try {
          job = run_job_from_json(req.at("job"));
        } catch (const std::exception& e) {
          refuse(internal_error(std::string("bad run job: ") + e.what()));
          continue;
        }
        RunResult r;
        Executor* ex = nullptr;
        if (job.kind != ModuleKind::cpu_library && !is_python(job.kind))
          if (ex = ready_executor(); !ex) continue;
        // kopt's own jobs read files: drawn inputs are written here first, unless the executor
        // draws them where they are used (Python draws its own).
        DrawnFiles drawn;
        if (!is_python(job.kind) && !(ex && ex->draws_inputs(job)))
          if (auto d = drawn.prepare(job); !d) {
            refuse(d.error());
            continue;
          }
        if (job.kind == ModuleKind::cpu_library)
          r = run_cpu_reference(job);
        else if (is_python(job.kind))
          r = get_python().run(job);
        else {
          ex->set_kept_comparer(kept_comparer);
          r = ex->run(job);
        }
        drawn.restore(r);
        reply({{"ok", true}, {"result", to_json(r)}});
        if (r.fatal) return 3;
      } else if (op == "bench") {
        BenchJob job;
        try {
          for (const auto& v : req.at("job").at("variants"))
            job.variants.push_back(run_job_from_json(v));
          job.options = bench_options_from_json(req.at("job").at("options"));
        } catch (const std::exception& e) {
          refuse(internal_error(std::string("bad bench job: ") + e.what()));
          continue;
        }
        if (!job.variants.empty() && is_python(job.variants[0].kind)) {
          reply({{"ok", true}, {"result", to_json(get_python().bench(job))}});
          continue;
        }
        Executor* ex = ready_executor();
        if (!ex) continue;
        // Drawn where they are timed, or made files here first.
        std::optional<Error> unwritten;  // the first: no file is drawn after a write failed
        if (!ex->draws_inputs(job))
          for (auto& v : job.variants)
            if (auto d = DrawnFiles().prepare(v); !d) {
              unwritten = d.error();
              break;
            }
        if (unwritten) {
          refuse(*unwritten);
          continue;
        }
        BenchResult r = ex->bench(job);
        reply({{"ok", true}, {"result", to_json(r)}});
        if (r.fatal) return 3;
      } else if (op == "toolkit" || op == "compile") {
        Executor* ex = ready_executor();
        if (!ex) continue;
        if (op == "toolkit") {
          auto t = ex->toolkit();
          if (!t)
            refuse(t.error());
          else
            reply({{"ok", true}, {"toolkit", *t}});
          continue;
        }
        CompileRequest creq;
        try {
          creq = compile_request_from_json(req.at("request"));
        } catch (const std::exception& e) {
          refuse(internal_error(std::string("bad compile request: ") + e.what()));
          continue;
        }
        auto b = ex->compile(creq, req.at("path").get<std::string>());
        if (!b)
          refuse(b.error());
        else
          reply({{"ok", true}, {"build", to_json(*b)}});
      } else if (op == "ceilings") {
        Executor* ex = ready_executor();
        if (!ex) continue;
        reply({{"ok", true}, {"result", to_json(ex->ceilings())}});
      } else {
        refuse(internal_error("unknown op '" + op + "'"));
      }
    } catch (const std::bad_alloc&) {
      refuse(environment_error("kopt's worker ran out of host memory (" + op +
                               "): the machine's limit, not the job's doing"));
    }
  }
  return 0;
}

}  // namespace kopt
