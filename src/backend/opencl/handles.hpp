#pragma once
// Move-only owners of OpenCL objects (docs/architecture.md §5: no raw handles outside the backend),
// and the device a worker or a compiler opens: context plus an in-order profiling queue.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kopt/backend/device_info.hpp"
#include "opencl_api.hpp"

namespace kopt::opencl {

template <class T, cl_int (*OpenclApi::*Release)(T)>
class Handle {
 public:
  Handle() = default;
  Handle(const OpenclApi* api, T h) : m_api(api), m_h(h) {}
  Handle(Handle&& o) noexcept : m_api(o.m_api), m_h(std::exchange(o.m_h, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    std::swap(m_api, o.m_api);
    std::swap(m_h, o.m_h);
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (m_h) (m_api->*Release)(m_h);
  }
  T get() const { return m_h; }
  explicit operator bool() const { return m_h != nullptr; }

 private:
  const OpenclApi* m_api = nullptr;
  T m_h = nullptr;
};

using Context = Handle<cl_context, &OpenclApi::release_context>;
using Queue = Handle<cl_command_queue, &OpenclApi::release_command_queue>;
using Program = Handle<cl_program, &OpenclApi::release_program>;
using Kernel = Handle<cl_kernel, &OpenclApi::release_kernel>;
using Buffer = Handle<cl_mem, &OpenclApi::release_mem_object>;
using Event = Handle<cl_event, &OpenclApi::release_event>;

struct DeviceRef {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name;
  std::string name;
  cl_device_type type = 0;
};

// Every device of every platform, GPUs first, then accelerators, then CPUs: kopt's
// OpenCL ordinals. An Error (environment, with an install hint) when there is none.
Expected<std::vector<DeviceRef>> list_devices(const OpenclApi& api);

// One opened device.
struct Session {
  const OpenclApi* api = nullptr;
  DeviceRef ref;
  Context context;
  Queue queue;  // in order, profiling enabled
  DeviceInfo info;
  // A CPU device that computes in the host memory of a CL_MEM_USE_HOST_PTR buffer: kopt's
  // tensors live in HostBlocks, and a cold sample evicts their lines (host_cache.hpp).
  bool tensors_in_place = false;
};
Expected<std::unique_ptr<Session>> open_session(int ordinal);

// A device query as a string or as a number of type T.
std::string device_string(const OpenclApi& api, cl_device_id d, cl_device_info what);
template <class T>
T device_value(const OpenclApi& api, cl_device_id d, cl_device_info what) {
  T v{};
  api.get_device_info(d, what, sizeof v, &v, nullptr);
  return v;
}

// A program built from source with the given options; on failure the build log is in `log`.
struct BuiltProgram {
  Program program;
  cl_int status = CL_SUCCESS;
  std::string log;
};
BuiltProgram build_program(const Session& s, const std::string& source, const std::string& options);

}  // namespace kopt::opencl
