#pragma once
// A job made ready to launch: module loaded, buffers allocated and filled (outputs poisoned),
// arguments packed. Shared by single runs and timing. Move-only RAII owners of every driver
// handle (docs/architecture.md §5: no raw handles escape backend/cuda).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device_draw.hpp"
#include "driver_api.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer(const DriverApi* api, CUdeviceptr ptr) : m_api(api), m_ptr(ptr) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept : m_api(o.m_api), m_ptr(std::exchange(o.m_ptr, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (m_ptr) m_api->mem_free(m_ptr);  // errors ignored: destructors never throw
  }
  CUdeviceptr get() const { return m_ptr; }

 private:
  const DriverApi* m_api;
  CUdeviceptr m_ptr;
};

class Module {
 public:
  Module(const DriverApi* api, CUmodule m) : m_api(api), m_module(m) {}
  Module(const Module&) = delete;
  ~Module() {
    if (m_module) m_api->module_unload(m_module);
  }
  CUmodule get() const { return m_module; }

 private:
  const DriverApi* m_api;
  CUmodule m_module;
};

class Event {
 public:
  explicit Event(const DriverApi* api) : m_api(api) {
    m_api->event_create(&m_event, CU_EVENT_DEFAULT);
  }
  Event(const Event&) = delete;
  ~Event() {
    if (m_event) m_api->event_destroy(m_event);
  }
  CUevent get() const { return m_event; }

 private:
  const DriverApi* m_api;
  CUevent m_event = nullptr;
};

class Stream {
 public:
  explicit Stream(const DriverApi* api) : m_api(api) {
    m_api->stream_create(&m_stream, CU_STREAM_NON_BLOCKING);
  }
  Stream(const Stream&) = delete;
  ~Stream() {
    if (m_stream) m_api->stream_destroy(m_stream);
  }
  CUstream get() const { return m_stream; }

 private:
  const DriverApi* m_api;
  CUstream m_stream = nullptr;
};

// Storage for one kernel argument: a pointer, a scalar typed as the kernel declares it, or a
// CUtensorMap (128 bytes, a 64-byte aligned parameter) passed by value; the driver copies
// the bytes into the parameter buffer. (cuda.h's host type asks for 128-byte alignment: it
// is encoded into one of its own and copied here.)
struct alignas(64) ArgSlot {
  unsigned char bytes[128] = {};
};
static_assert(sizeof(CUtensorMap) == sizeof(ArgSlot));

struct PreparedLaunch {
  const DriverApi* api = nullptr;
  const RunJob* job = nullptr;
  std::unique_ptr<Module> module;
  CUfunction function = nullptr;
  // A solve() library: its shim is called instead of a launch; it launches on the legacy
  // default stream, which `launch` orders after and before the caller's stream.
  std::unique_ptr<DynLib> library;
  const char* (*shim)(void**) = nullptr;
  std::unique_ptr<Event> before, after;
  mutable std::string solve_error;    // what the shim's last call reported
  std::vector<DeviceBuffer> buffers;  // in the order of job->tensors
  std::vector<ArgSlot> slots;
  std::vector<void*> params;

  CUresult launch(CUstream stream) const;
  bool is_solve() const { return shim != nullptr; }
  // Fills buffer `index` (an output) with `fill` (its dtype's poison, or a stale fill), queued on
  // `stream`.
  CUresult poison(CUstream stream, std::size_t index, Poison fill) const;
};

// Describes a driver failure: "cuCall: CUDA_ERROR_X: text".
RunResult driver_failure(const DriverApi& api, RunStatus status, const char* call, CUresult r);
// cuMemAlloc refused one of kopt's own buffers (`what`: a tensor, the L2 flush): out of memory
// is the machine's failure, never the kernel's verdict (docs/architecture.md).
RunResult own_allocation_failure(const DriverApi& api, const std::string& what, CUresult r);

// Builds kopt's own small kernels (timer helpers, ceilings) with NVRTC and loads them;
// nullptr when either step fails (the caller degrades and says so).
std::unique_ptr<Module> load_builtin_module(const DriverApi& api, const std::string& arch,
                                            const std::string& name, const char* source,
                                            const std::string& entry);

// Copies `bytes` from the host to `dst` and waits until they are there. cuMemcpyHtoD from
// pageable memory returns once the data is staged, before its last DMA lands, and a kernel on
// one of kopt's non-blocking streams is not ordered after it: a hash, a mask or a candidate's
// launch queued next could read the tail of the old contents.
CUresult copy_to_device(const DriverApi& api, CUdeviceptr dst, const void* src, std::size_t bytes);

// Prepares `job` (its copies, draws and fills done when it returns); on failure returns nullopt
// with `failure` filled in. With `draw`, inputs that have a recipe are drawn on the device
// (device_draw.hpp) and their files are not read; without it every input is read from its file.
std::optional<PreparedLaunch> prepare_launch(const DriverApi& api, const RunJob& job,
                                             RunResult& failure, const InputDraw* draw = nullptr);

}  // namespace kopt::cuda
