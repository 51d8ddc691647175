#include "prepared_kernel.hpp"

#include "kopt/backend/scalar_arg.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "module_file.hpp"

namespace kopt::opencl {

RunResult cl_failure(RunStatus status, const std::string& call, cl_int code) {
  RunResult r;
  r.status = status;
  r.error = call + ": " + cl_error_name(code);
  r.fatal = status == RunStatus::fault;
  return r;
}

cl_int PreparedKernel::enqueue(const Session& s, cl_event* event) const {
  return s.api->enqueue_nd_range_kernel(s.queue.get(), kernel.get(), dims, nullptr, global, local,
                                        0, nullptr, event);
}

cl_int PreparedKernel::poison(const Session& s, std::size_t index, const JobTensor& tensor,
                              Poison pz) const {
  // A kernel that skips an element leaves the fill (a NaN or a sentinel, or stale values) behind.
  return s.api->enqueue_fill_buffer(s.queue.get(), buffers[index].get(), &pz.pattern, pz.width, 0,
                                    tensor.bytes / pz.width * pz.width, 0, nullptr, nullptr);
}

std::optional<RunResult> PreparedKernel::read(const Session& s, std::size_t index,
                                              const JobTensor& tensor,
                                              std::vector<std::byte>& host) const {
  cl_int err = s.api->enqueue_read_buffer(s.queue.get(), buffers[index].get(), CL_TRUE, 0,
                                          host.size(), host.data(), 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    return cl_failure(RunStatus::fault, "clEnqueueReadBuffer(" + tensor.name + ")", err);
  return std::nullopt;
}

std::optional<double> event_seconds(const OpenclApi& api, cl_event e) {
  cl_ulong start = 0, end = 0;
  if (api.get_event_profiling_info(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) !=
          CL_SUCCESS ||
      api.get_event_profiling_info(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) !=
          CL_SUCCESS)
    return std::nullopt;
  return static_cast<double>(end - start) * 1e-9;
}

namespace {

const Program* program_for(const Session& s, OpenclExecutor::Programs& programs, const RunJob& job,
                           RunResult& failure) {
  std::string key = job.module_path.string();
  if (auto it = programs.by_module.find(key); it != programs.by_module.end()) return &it->second;
  auto m = read_module_file(job.module_path);
  if (!m) {
    failure.status = RunStatus::load_failed;
    failure.error = m.error().to_string();
    return nullptr;
  }
  BuiltProgram b = build_program(s, m->source, m->options);
  if (b.status != CL_SUCCESS) {
    failure.status = RunStatus::load_failed;
    failure.error = "clBuildProgram: " + cl_error_name(b.status) + "\n" +
                    rename_source_in_log(b.log, m->source_name);
    return nullptr;
  }
  return &programs.by_module.emplace(key, std::move(b.program)).first->second;
}

}  // namespace

std::optional<PreparedKernel> prepare_kernel(const Session& s, OpenclExecutor::Programs& programs,
                                             const RunJob& job, RunResult& failure) {
  const OpenclApi& api = *s.api;
  auto fail = [&](RunStatus status, const std::string& why) {
    failure.status = status;
    failure.error = why;
    return std::nullopt;
  };
  if (job.kind != ModuleKind::cubin)
    return fail(RunStatus::load_failed, "the OpenCL executor runs kernels only");
  if (std::string why = tensor_map_refusal(job.args, "the OpenCL backend"); !why.empty())
    return fail(RunStatus::launch_failed, why);
  const Program* program = program_for(s, programs, job, failure);
  if (!program) return std::nullopt;
  PreparedKernel p;
  cl_int err = CL_SUCCESS;
  p.kernel = Kernel(&api, api.create_kernel(program->get(), job.entry.c_str(), &err));
  if (err != CL_SUCCESS)
    return fail(RunStatus::load_failed, "clCreateKernel(" + job.entry + "): " + cl_error_name(err));
  std::map<std::string, cl_mem> by_name;
  for (const auto& t : job.tensors) {
    const std::size_t bytes = std::max<std::size_t>(t.bytes, 1);
    void* host = nullptr;
    if (s.tensors_in_place) {
      HostBlock block(bytes);
      host = block.data();
      p.storage.push_back(std::move(block));
    }
    cl_mem m = nullptr;
    if (s.tensors_in_place && !host)
      err = CL_OUT_OF_HOST_MEMORY;
    else
      m = api.create_buffer(s.context.get(),
                            CL_MEM_READ_WRITE | (host ? CL_MEM_USE_HOST_PTR : cl_mem_flags{0}),
                            bytes, host, &err);
    if (err != CL_SUCCESS) {
      // kopt's own tensor found no room on the device: the machine's failure, not a verdict.
      failure.environment = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                            err == CL_OUT_OF_HOST_MEMORY;
      return fail(RunStatus::launch_failed, "kopt's tensor " + t.name + " (" +
                                                human_bytes(t.bytes) +
                                                "): clCreateBuffer: " + cl_error_name(err));
    }
    p.buffers.emplace_back(&api, m);
    by_name[t.name] = m;
    if (t.role == Role::output) {
      err = p.poison(s, p.buffers.size() - 1, t, poison_for(t.dtype));
    } else {
      auto data = read_binary_file(t.input_path);
      if (!data) return fail(RunStatus::launch_failed, data.error().to_string());
      if (data->size() != t.bytes)
        return fail(RunStatus::launch_failed,
                    "input file " + t.input_path.string() + " has the wrong size");
      err = api.enqueue_write_buffer(s.queue.get(), m, CL_TRUE, 0, t.bytes, data->data(), 0,
                                     nullptr, nullptr);
    }
    if (err != CL_SUCCESS)
      return fail(RunStatus::launch_failed, "filling " + t.name + ": " + cl_error_name(err));
  }
  if ((err = api.finish(s.queue.get())) != CL_SUCCESS)
    return fail(RunStatus::launch_failed, "clFinish: " + cl_error_name(err));
  for (std::size_t i = 0; i < job.args.size(); ++i) {
    const auto& a = job.args[i];
    if (!a.tensor.empty()) {
      auto it = by_name.find(a.tensor);
      if (it == by_name.end())
        return fail(RunStatus::launch_failed, "argument names unknown tensor " + a.tensor);
      err =
          api.set_kernel_arg(p.kernel.get(), static_cast<cl_uint>(i), sizeof(cl_mem), &it->second);
    } else {
      ScalarBytes b = scalar_bytes(a);
      err = api.set_kernel_arg(p.kernel.get(), static_cast<cl_uint>(i), b.size, b.bytes);
    }
    if (err != CL_SUCCESS)
      return fail(RunStatus::launch_failed,
                  "clSetKernelArg(" + std::to_string(i) + ", " +
                      (a.tensor.empty() ? std::string("scalar") : a.tensor) +
                      "): " + cl_error_name(err) +
                      " (does the kernel's signature match kopt.toml's args?)");
  }
  // A launch's dynamic shared memory is OpenCL's dynamic local memory: one trailing
  // `__local` pointer argument of that many bytes.
  if (job.shared_mem > 0) {
    auto idx = static_cast<cl_uint>(job.args.size());
    err =
        api.set_kernel_arg(p.kernel.get(), idx, static_cast<std::size_t>(job.shared_mem), nullptr);
    if (err != CL_SUCCESS)
      return fail(RunStatus::launch_failed,
                  "clSetKernelArg(" + std::to_string(idx) + ", __local " +
                      std::to_string(job.shared_mem) + " bytes): " + cl_error_name(err) +
                      " (the launch has shared_mem: the kernel needs a trailing __local "
                      "pointer argument)");
  }
  p.dims = job.grid[2] * job.block[2] > 1 ? 3 : job.grid[1] * job.block[1] > 1 ? 2 : 1;
  for (int d = 0; d < 3; ++d) {
    p.local[d] = static_cast<std::size_t>(job.block[d]);
    p.global[d] = static_cast<std::size_t>(job.grid[d] * job.block[d]);
  }
  return p;
}

}  // namespace kopt::opencl
