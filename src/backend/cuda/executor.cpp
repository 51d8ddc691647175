#include "kopt/backend/cuda/executor.hpp"

#include <chrono>
#include <cstring>

#include "driver_api.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "nvml_api.hpp"
#include "resources.hpp"

namespace kopt::cuda {

// Every driver call in this file goes through one of these: the call text and file:line
// are kept with the error (DESIGN.md §5).
#define KOPT_CU_CHECK(api, call)                                                             \
  do {                                                                                       \
    CUresult kopt_r_ = (call);                                                               \
    if (kopt_r_ != CUDA_SUCCESS)                                                             \
      return Unexpected(environment_error(std::string(#call) + " failed at " __FILE__ ":" +  \
                                          std::to_string(__LINE__) + ": " +                 \
                                          (api)->describe(kopt_r_)));                        \
  } while (0)

#define KOPT_CU_RUN(api, status, call)                                              \
  do {                                                                              \
    CUresult kopt_r_ = (call);                                                      \
    if (kopt_r_ != CUDA_SUCCESS) return fail(status, #call, kopt_r_);               \
  } while (0)

struct CudaExecutor::State {
  const DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  int ordinal = 0;
};

CudaExecutor::CudaExecutor(std::unique_ptr<State> state) : m_state(std::move(state)) {}

CudaExecutor::~CudaExecutor() {
  if (m_state && m_state->ctx) m_state->api->primary_ctx_release(m_state->device);
}

Expected<DriverProbe> probe_driver() {
  auto api = driver_api();
  if (!api) return Unexpected(api.error());
  const DriverApi* a = *api;
  DriverProbe p;
  p.library_path = a->lib.path();
  KOPT_CU_CHECK(a, a->init(0));
  KOPT_CU_CHECK(a, a->driver_get_version(&p.driver_version));
  KOPT_CU_CHECK(a, a->device_get_count(&p.device_count));
  if (p.device_count == 0) return Unexpected(environment_error("the CUDA driver sees no device"));
  return p;
}

Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::open(int ordinal) {
  auto api = driver_api();
  if (!api) return Unexpected(api.error());
  auto s = std::make_unique<State>();
  s->api = *api;
  s->ordinal = ordinal;
  const DriverApi* a = s->api;
  KOPT_CU_CHECK(a, a->init(0));
  int count = 0;
  KOPT_CU_CHECK(a, a->device_get_count(&count));
  if (ordinal < 0 || ordinal >= count)
    return Unexpected(environment_error("no CUDA device " + std::to_string(ordinal) + " (" +
                                        std::to_string(count) + " present)"));
  KOPT_CU_CHECK(a, a->device_get(&s->device, ordinal));
  KOPT_CU_CHECK(a, a->primary_ctx_retain(&s->ctx, s->device));
  KOPT_CU_CHECK(a, a->ctx_set_current(s->ctx));
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(s)));
}

Clocks read_clocks(const std::string& pci_bus_id) {
  Clocks c;
  auto api = nvml_api();
  if (!api) {
    c.nvml_error = api.error().message;
    return c;
  }
  const NvmlApi* n = *api;
  NvmlDevice dev = nullptr;
  if (NvmlReturn r = n->device_get_handle_by_pci_bus_id(pci_bus_id.c_str(), &dev); r != 0) {
    c.nvml_error = std::string("nvmlDeviceGetHandleByPciBusId: ") + n->error_string(r);
    return c;
  }
  unsigned v = 0;
  if (n->device_get_clock_info(dev, nvml_clock_sm, &v) == 0) c.sm_mhz = v;
  if (n->device_get_clock_info(dev, nvml_clock_mem, &v) == 0) c.mem_mhz = v;
  if (n->device_get_max_clock_info(dev, nvml_clock_sm, &v) == 0) c.max_sm_mhz = v;
  if (n->device_get_max_clock_info(dev, nvml_clock_mem, &v) == 0) c.max_mem_mhz = v;
  if (n->device_get_temperature(dev, 0, &v) == 0) c.temperature_c = v;
  if (n->device_get_power_usage(dev, &v) == 0) c.power_w = v / 1000.0;
  unsigned long long mask = 0;
  if (n->device_get_throttle_reasons(dev, &mask) == 0) {
    c.throttle_mask = mask;
    c.throttle_reasons = throttle_reason_names(mask);
  }
  return c;
}

Expected<DeviceInfo> CudaExecutor::device_info() const {
  const DriverApi* a = m_state->api;
  CUdevice dev = m_state->device;
  DeviceInfo d;
  d.ordinal = m_state->ordinal;
  char name[256] = {};
  KOPT_CU_CHECK(a, a->device_get_name(name, sizeof name, dev));
  d.name = name;
  char bus[64] = {};
  KOPT_CU_CHECK(a, a->device_get_pci_bus_id(bus, sizeof bus, dev));
  d.pci_bus_id = bus;
  auto attr = [&](CUdevice_attribute at) {
    int v = 0;
    a->device_get_attribute(&v, at, dev);
    return v;
  };
  d.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.max_shared_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.max_registers_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.limits.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.limits.max_block = {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                        attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  d.limits.max_grid = {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                       attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  d.limits.max_shared_per_block_optin = d.max_shared_per_block_optin;
  d.limits.sm_count = d.sm_count;
  std::size_t mem = 0;
  KOPT_CU_CHECK(a, a->device_total_mem(&mem, dev));
  d.memory_bytes = static_cast<std::int64_t>(mem);
  KOPT_CU_CHECK(a, a->driver_get_version(&d.driver_version));
  d.clocks = read_clocks(d.pci_bus_id);
  if (auto n = nvml_api()) {
    char release[96] = {};
    if ((*n)->system_get_driver_version(release, sizeof release) == 0) d.driver_release = release;
  }
  return d;
}

namespace {

// Move-only owners of driver handles (DESIGN.md §5: no raw handles escape this file).
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

 private:
  const DriverApi* m_api;
  CUmodule m_module;
};

class Event {
 public:
  explicit Event(const DriverApi* api) : m_api(api) { m_api->event_create(&m_event, CU_EVENT_DEFAULT); }
  Event(const Event&) = delete;
  ~Event() {
    if (m_event) m_api->event_destroy(m_event);
  }
  CUevent get() const { return m_event; }

 private:
  const DriverApi* m_api;
  CUevent m_event = nullptr;
};

// 8-byte storage for one scalar kernel argument, typed as the kernel declares it.
struct ArgSlot {
  alignas(8) unsigned char bytes[8] = {};
};

void fill_scalar(ArgSlot& slot, const ResolvedArg& a) {
  auto put = [&](auto v) { std::memcpy(slot.bytes, &v, sizeof v); };
  if (std::holds_alternative<double>(a.value)) {
    double v = std::get<double>(a.value);
    if (a.dtype == DType::f64) put(v);
    else put(static_cast<float>(v));
    return;
  }
  std::int64_t v = std::get<std::int64_t>(a.value);
  switch (a.dtype) {
    case DType::i64: put(v); break;
    case DType::i32: put(static_cast<std::int32_t>(v)); break;
    case DType::i16: put(static_cast<std::int16_t>(v)); break;
    case DType::i8: put(static_cast<std::int8_t>(v)); break;
    case DType::u8: put(static_cast<std::uint8_t>(v)); break;
    case DType::f64: put(static_cast<double>(v)); break;
    default: put(static_cast<float>(v)); break;
  }
}

}  // namespace

RunResult CudaExecutor::run(const RunJob& job) {
  const DriverApi* api = m_state->api;
  RunResult result;
  auto fail = [&](RunStatus status, const char* call, CUresult r) {
    result.status = status;
    result.error = std::string(call) + ": " + api->describe(r);
    // After a fault the context is unusable (sticky error): the worker must restart.
    result.fatal = status == RunStatus::fault;
    return result;
  };
  auto fail_io = [&](const std::string& why) {
    result.status = RunStatus::launch_failed;
    result.error = why;
    return result;
  };

  auto image = read_binary_file(job.module_path);
  if (!image) return fail_io(image.error().to_string());
  CUmodule raw_module = nullptr;
  KOPT_CU_RUN(api, RunStatus::load_failed, api->module_load_data(&raw_module, image->data()));
  Module module(api, raw_module);
  CUfunction fn = nullptr;
  KOPT_CU_RUN(api, RunStatus::load_failed, api->module_get_function(&fn, raw_module, job.entry.c_str()));
  result.resources = function_resources(*api, fn);
  if (job.shared_mem > 48 * 1024)
    KOPT_CU_RUN(api, RunStatus::launch_failed,
                api->func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(job.shared_mem)));

  std::vector<DeviceBuffer> buffers;
  std::map<std::string, CUdeviceptr> by_name;
  for (const auto& t : job.tensors) {
    CUdeviceptr ptr = 0;
    KOPT_CU_RUN(api, RunStatus::launch_failed, api->mem_alloc(&ptr, std::max<std::size_t>(t.bytes, 1)));
    buffers.emplace_back(api, ptr);
    by_name[t.name] = ptr;
    if (t.role == Role::output) {
      // Poison: a kernel that skips an element leaves a NaN (or a sentinel) behind.
      Poison p = poison_for(t.dtype);
      if (p.width == 4) KOPT_CU_RUN(api, RunStatus::launch_failed, api->memset_d32(ptr, p.pattern, t.bytes / 4));
      else if (p.width == 2) KOPT_CU_RUN(api, RunStatus::launch_failed, api->memset_d16(ptr, static_cast<unsigned short>(p.pattern), t.bytes / 2));
      else KOPT_CU_RUN(api, RunStatus::launch_failed, api->memset_d8(ptr, static_cast<unsigned char>(p.pattern), t.bytes));
    } else {
      auto data = read_binary_file(t.input_path);
      if (!data) return fail_io(data.error().to_string());
      if (data->size() != t.bytes) return fail_io("input file " + t.input_path.string() + " has the wrong size");
      KOPT_CU_RUN(api, RunStatus::launch_failed, api->memcpy_htod(ptr, data->data(), t.bytes));
    }
  }

  std::vector<ArgSlot> slots(job.args.size());
  std::vector<void*> params;
  for (std::size_t i = 0; i < job.args.size(); ++i) {
    const auto& a = job.args[i];
    if (!a.tensor.empty()) {
      auto it = by_name.find(a.tensor);
      if (it == by_name.end()) return fail_io("argument names unknown tensor " + a.tensor);
      std::memcpy(slots[i].bytes, &it->second, sizeof(CUdeviceptr));
    } else {
      fill_scalar(slots[i], a);
    }
    params.push_back(slots[i].bytes);
  }

  Event start(api), stop(api);
  KOPT_CU_RUN(api, RunStatus::fault, api->ctx_synchronize());
  KOPT_CU_RUN(api, RunStatus::launch_failed, api->event_record(start.get(), nullptr));
  KOPT_CU_RUN(api, RunStatus::launch_failed,
              api->launch_kernel(fn, static_cast<unsigned>(job.grid[0]), static_cast<unsigned>(job.grid[1]),
                                 static_cast<unsigned>(job.grid[2]), static_cast<unsigned>(job.block[0]),
                                 static_cast<unsigned>(job.block[1]), static_cast<unsigned>(job.block[2]),
                                 static_cast<unsigned>(job.shared_mem), nullptr, params.data(), nullptr));
  KOPT_CU_RUN(api, RunStatus::fault, api->event_record(stop.get(), nullptr));
  KOPT_CU_RUN(api, RunStatus::fault, api->ctx_synchronize());
  float ms = 0.f;
  if (api->event_elapsed_time(&ms, start.get(), stop.get()) == CUDA_SUCCESS) result.kernel_ms = ms;

  for (std::size_t i = 0; i < job.tensors.size(); ++i) {
    const auto& t = job.tensors[i];
    std::vector<std::byte> host(t.bytes);
    KOPT_CU_RUN(api, RunStatus::fault, api->memcpy_dtoh(host.data(), buffers[i].get(), t.bytes));
    if (t.role == Role::input) result.input_checksums[t.name] = hex64(checksum64(host));
    else if (auto w = write_file_atomic(t.output_path, host); !w) return fail_io(w.error().to_string());
  }
  return result;
}

}  // namespace kopt::cuda
