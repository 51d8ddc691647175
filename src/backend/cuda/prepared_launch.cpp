#include "prepared_launch.hpp"

#include <algorithm>
#include <cstring>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/scalar_arg.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/units.hpp"
#include "tensor_map.hpp"

namespace kopt::cuda {
std::unique_ptr<Module> load_builtin_module(const DriverApi& api, const std::string& arch,
                                            const std::string& name, const char* source,
                                            const std::string& entry) {
  TempDir tmp("kopt-builtin");
  CompileRequest req;
  req.source_path = name + ".cu";
  req.source_text = source;
  req.entry = entry;
  req.arch = arch;
  auto built = NvrtcCompiler().compile(req, tmp.path() / (name + ".cubin"));
  if (!built || !built->ok) return nullptr;
  auto image = read_binary_file(built->cubin_path);
  CUmodule m = nullptr;
  if (!image || api.module_load_data(&m, image->data()) != CUDA_SUCCESS) return nullptr;
  return std::make_unique<Module>(&api, m);
}

RunResult driver_failure(const DriverApi& api, RunStatus status, const char* call, CUresult r) {
  RunResult result;
  result.status = status;
  result.error = std::string(call) + ": " + api.describe(r);
  // After a fault the context is unusable (sticky error): the worker must restart.
  result.fatal = status == RunStatus::fault;
  return result;
}

RunResult own_allocation_failure(const DriverApi& api, const std::string& what, CUresult r) {
  RunResult result = driver_failure(api, RunStatus::launch_failed, "cuMemAlloc", r);
  result.error = what + ": " + result.error;
  result.environment = r == CUDA_ERROR_OUT_OF_MEMORY;
  return result;
}

CUresult PreparedLaunch::launch(CUstream stream) const {
  if (shim) {
    // solve() launches on the legacy default stream: it waits for `stream`, and `stream`
    // for it, so events recorded on `stream` bracket its work.
    if (stream) {
      if (CUresult r = api->event_record(before->get(), stream); r != CUDA_SUCCESS) return r;
      if (CUresult r = api->stream_wait_event(CU_STREAM_LEGACY, before->get(), 0);
          r != CUDA_SUCCESS)
        return r;
    }
    if (const char* err = shim(const_cast<void**>(params.data()))) {
      solve_error = err;
      // A fault inside leaves the context broken (sticky): say so, so the worker restarts.
      CUresult sync = api->ctx_synchronize();
      return sync != CUDA_SUCCESS ? sync : CUDA_ERROR_LAUNCH_FAILED;
    }
    // Work the library left running on streams of its own ends before the stop event: the
    // whole device is synchronized (the host call is inside the timed window anyway).
    if (CUresult r = api->ctx_synchronize(); r != CUDA_SUCCESS) return r;
    if (stream) {
      if (CUresult r = api->event_record(after->get(), CU_STREAM_LEGACY); r != CUDA_SUCCESS)
        return r;
      return api->stream_wait_event(stream, after->get(), 0);
    }
    return CUDA_SUCCESS;
  }
  return api->launch_kernel(
      function, static_cast<unsigned>(job->grid[0]), static_cast<unsigned>(job->grid[1]),
      static_cast<unsigned>(job->grid[2]), static_cast<unsigned>(job->block[0]),
      static_cast<unsigned>(job->block[1]), static_cast<unsigned>(job->block[2]),
      static_cast<unsigned>(job->shared_mem), stream, const_cast<void**>(params.data()), nullptr);
}

CUresult PreparedLaunch::poison(CUstream stream, std::size_t index, Poison pz) const {
  const JobTensor& t = job->tensors[index];
  CUdeviceptr ptr = buffers[index].get();
  if (pz.width == 4) return api->memset_d32_async(ptr, pz.pattern, t.bytes / 4, stream);
  if (pz.width == 2)
    return api->memset_d16_async(ptr, static_cast<unsigned short>(pz.pattern), t.bytes / 2, stream);
  return api->memset_d8_async(ptr, static_cast<unsigned char>(pz.pattern), t.bytes, stream);
}

#define KOPT_CU_PREPARE(status, call)                        \
  do {                                                       \
    CUresult kopt_r_ = (call);                               \
    if (kopt_r_ != CUDA_SUCCESS) {                           \
      failure = driver_failure(api, status, #call, kopt_r_); \
      return std::nullopt;                                   \
    }                                                        \
  } while (0)

std::optional<PreparedLaunch> prepare_launch(const DriverApi& api, const RunJob& job,
                                             RunResult& failure, const InputDraw* draw) {
  auto fail_io = [&](const std::string& why) {
    failure.status = RunStatus::launch_failed;
    failure.error = why;
    return std::nullopt;
  };
  PreparedLaunch p;
  p.api = &api;
  p.job = &job;
  if (job.kind == ModuleKind::solve_library) {
    auto lib = DynLib::open({job.module_path.string()}, "the solve() library");
    if (!lib) {
      failure.status = RunStatus::load_failed;
      failure.error = lib.error().message;
      return std::nullopt;
    }
    p.library = std::make_unique<DynLib>(std::move(*lib));
    p.shim = reinterpret_cast<const char* (*)(void**)>(p.library->symbol(job.entry.c_str()));
    if (!p.shim) {
      failure.status = RunStatus::load_failed;
      failure.error = job.module_path.string() + " has no " + job.entry;
      return std::nullopt;
    }
    p.before = std::make_unique<Event>(&api);
    p.after = std::make_unique<Event>(&api);
  } else {
    auto image = read_binary_file(job.module_path);
    if (!image) return fail_io(image.error().to_string());
    CUmodule raw = nullptr;
    KOPT_CU_PREPARE(RunStatus::load_failed, api.module_load_data(&raw, image->data()));
    p.module = std::make_unique<Module>(&api, raw);
    KOPT_CU_PREPARE(RunStatus::load_failed,
                    api.module_get_function(&p.function, raw, job.entry.c_str()));
  }
  if (job.shared_mem > 48 * 1024)
    KOPT_CU_PREPARE(
        RunStatus::launch_failed,
        api.func_set_attribute(p.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(job.shared_mem)));
  std::map<std::string, CUdeviceptr> by_name;
  for (const auto& t : job.tensors) {
    CUdeviceptr ptr = 0;
    if (CUresult r = api.mem_alloc(&ptr, std::max<std::size_t>(t.bytes, 1)); r != CUDA_SUCCESS) {
      failure = own_allocation_failure(
          api, "kopt's tensor " + t.name + " (" + human_bytes(t.bytes) + ")", r);
      return std::nullopt;
    }
    p.buffers.emplace_back(&api, ptr);
    by_name[t.name] = ptr;
    if (t.role == Role::output) {
      // Poison: a kernel that skips an element leaves a NaN (or a sentinel) behind.
      Poison pz = poison_for(t.dtype);
      if (pz.width == 4)
        KOPT_CU_PREPARE(RunStatus::launch_failed, api.memset_d32(ptr, pz.pattern, t.bytes / 4));
      else if (pz.width == 2)
        KOPT_CU_PREPARE(RunStatus::launch_failed,
                        api.memset_d16(ptr, static_cast<unsigned short>(pz.pattern), t.bytes / 2));
      else
        KOPT_CU_PREPARE(RunStatus::launch_failed,
                        api.memset_d8(ptr, static_cast<unsigned char>(pz.pattern), t.bytes));
    } else if (draw && t.draw) {
      // kopt's own kernel failing here is the worker's failure, not the candidate's.
      if (CUresult r = draw_on_device(api, *draw, ptr, t); r != CUDA_SUCCESS) {
        failure = driver_failure(api, RunStatus::launch_failed,
                                 ("cuLaunchKernel(kopt_draw_tensor, " + t.name + ")").c_str(), r);
        failure.environment = true;
        return std::nullopt;
      }
    } else {
      auto data = read_binary_file(t.input_path);
      if (!data) return fail_io(data.error().to_string());
      if (data->size() != t.bytes)
        return fail_io("input file " + t.input_path.string() + " has the wrong size");
      KOPT_CU_PREPARE(RunStatus::launch_failed, api.memcpy_htod(ptr, data->data(), t.bytes));
    }
  }
  p.slots.resize(job.args.size());
  if (p.is_solve())
    if (std::string why = tensor_map_refusal(job.args, "a solve() library"); !why.empty())
      return fail_io(why);
  for (std::size_t i = 0; i < job.args.size(); ++i) {
    const auto& a = job.args[i];
    if (a.tensor_map) {
      auto it = by_name.find(a.tensor);
      auto t = std::find_if(job.tensors.begin(), job.tensors.end(),
                            [&](const JobTensor& x) { return x.name == a.tensor; });
      if (it == by_name.end() || t == job.tensors.end())
        return fail_io("argument names unknown tensor " + a.tensor);
      CUtensorMap map{};
      if (std::string why = encode_tensor_map(api, a, *t, it->second, map); !why.empty())
        return fail_io("argument " + std::to_string(i) + ": " + why);
      std::memcpy(p.slots[i].bytes, &map, sizeof map);
    } else if (!a.tensor.empty()) {
      auto it = by_name.find(a.tensor);
      if (it == by_name.end()) return fail_io("argument names unknown tensor " + a.tensor);
      std::memcpy(p.slots[i].bytes, &it->second, sizeof(CUdeviceptr));
    } else {
      ScalarBytes b = scalar_bytes(a);
      std::memcpy(p.slots[i].bytes, b.bytes, b.size);
    }
    p.params.push_back(p.slots[i].bytes);
  }
  // The fills and copies above are on the legacy stream, asynchronous to the host and unordered
  // with the non-blocking streams the launches and kopt's checks run on.
  KOPT_CU_PREPARE(RunStatus::launch_failed, api.ctx_synchronize());
  return p;
}

CUresult copy_to_device(const DriverApi& api, CUdeviceptr dst, const void* src, std::size_t bytes) {
  if (CUresult r = api.memcpy_htod(dst, src, bytes); r != CUDA_SUCCESS) return r;
  return api.ctx_synchronize();
}

}  // namespace kopt::cuda
