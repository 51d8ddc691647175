#include "kopt/backend/cuda/executor.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "driver_api.hpp"
#include "executor_state.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "nvml_api.hpp"
#include "prepared_launch.hpp"
#include "resources.hpp"
#include "run_compare.hpp"

namespace kopt::cuda {

// Every driver call in this file goes through one of these: the call text and file:line
// are kept with the error (docs/architecture.md §5).
#define KOPT_CU_CHECK(api, call)                                                            \
  do {                                                                                      \
    CUresult kopt_r_ = (call);                                                              \
    if (kopt_r_ != CUDA_SUCCESS)                                                            \
      return Unexpected(environment_error(std::string(#call) + " failed at " __FILE__ ":" + \
                                          std::to_string(__LINE__) + ": " +                 \
                                          (api)->describe(kopt_r_)));                       \
  } while (0)

#define KOPT_CU_RUN(api, status, call)                                \
  do {                                                                \
    CUresult kopt_r_ = (call);                                        \
    if (kopt_r_ != CUDA_SUCCESS) return fail(status, #call, kopt_r_); \
  } while (0)

CudaExecutor::CudaExecutor(std::unique_ptr<State> state) : m_state(std::move(state)) {}

CudaExecutor::~CudaExecutor() {
  if (m_state) {  // their buffers and module freed while the context lives
    m_state->expected.reset();
    m_state->helpers.reset();
  }
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

namespace {

// NVML's handle of the device at `pci_bus_id`, looked up once per device: the batch's peak
// watch reads a device's memory every 20 ms, and each device's thread (--gpus) its own.
Expected<NvmlDevice> nvml_device(const NvmlApi* n, const std::string& pci_bus_id) {
  static std::mutex mutex;
  static std::map<std::string, NvmlDevice> handles;
  std::lock_guard lock(mutex);
  if (auto it = handles.find(pci_bus_id); it != handles.end()) return it->second;
  NvmlDevice dev = nullptr;
  if (NvmlReturn r = n->device_get_handle_by_pci_bus_id(pci_bus_id.c_str(), &dev); r != 0)
    return Unexpected(
        environment_error(std::string("nvmlDeviceGetHandleByPciBusId: ") + n->error_string(r)));
  handles.emplace(pci_bus_id, dev);
  return dev;
}

}  // namespace

Clocks read_clocks(const std::string& pci_bus_id) {
  Clocks c;
  auto api = nvml_api();
  if (!api) {
    c.nvml_error = api.error().message;
    return c;
  }
  const NvmlApi* n = *api;
  auto found = nvml_device(n, pci_bus_id);
  if (!found) {
    c.nvml_error = found.error().message;
    return c;
  }
  NvmlDevice dev = *found;
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

Expected<std::uint64_t> read_memory_used(const std::string& pci_bus_id) {
  auto api = nvml_api();
  if (!api) return Unexpected(api.error());
  const NvmlApi* n = *api;
  if (!n->device_get_memory_info)
    return Unexpected(environment_error("this NVML has no nvmlDeviceGetMemoryInfo"));
  auto dev = nvml_device(n, pci_bus_id);
  if (!dev) return Unexpected(dev.error());
  NvmlMemory m{};
  if (NvmlReturn r = n->device_get_memory_info(*dev, &m); r != 0)
    return Unexpected(
        environment_error(std::string("nvmlDeviceGetMemoryInfo: ") + n->error_string(r)));
  return static_cast<std::uint64_t>(m.used);
}

unsigned long long read_throttle_mask(const std::string& pci_bus_id) {
  auto api = nvml_api();
  if (!api) return 0;
  auto dev = nvml_device(*api, pci_bus_id);
  unsigned long long mask = 0;
  return dev && (*api)->device_get_throttle_reasons(*dev, &mask) == 0 ? mask : 0;
}

Expected<const DeviceInfo*> CudaExecutor::cached_device_info() {
  if (!m_state->info) {
    auto info = device_info();
    if (!info) return Unexpected(info.error());
    m_state->info = *info;
  }
  return &*m_state->info;
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
  CUuuid uuid{};
  if (a->device_get_uuid(&uuid, dev) == CUDA_SUCCESS) {
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    d.uuid = "GPU-";
    for (int i = 0; i < 16; ++i)
      d.uuid += fmt::format("{:02x}{}", b[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
  }
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
  d.limits.max_block = {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                        attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                        attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  d.limits.max_grid = {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                       attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
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

bool CudaExecutor::helpers_draw_and_compare() {
  auto info = cached_device_info();
  if (!info) return false;
  const TimerHelpers& h = timer_helpers(m_state->helpers, *m_state->api, (*info)->arch());
  // The comparison needs all of them too: it alone says whether an input drawn here was left
  // as drawn (no file holds its checksum).
  return h.draw && h.hash && h.compare && h.mask && h.l2;
}

bool CudaExecutor::draws_inputs(const RunJob& job) {
  return draws_on_device(job) && helpers_draw_and_compare();
}

bool CudaExecutor::draws_inputs(const BenchJob& job) {
  return draws_on_device(job) && helpers_draw_and_compare();
}

RunResult CudaExecutor::run(const RunJob& job) {
  const DriverApi& api = *m_state->api;
  RunResult result;
  std::optional<InputDraw> draw;
  if (draws_inputs(job))
    draw = InputDraw{m_state->helpers->draw, (*cached_device_info())->sm_count};
  auto prepared = prepare_launch(api, job, result, draw ? &*draw : nullptr);
  if (!prepared) return result;
  if (!prepared->is_solve()) result.resources = function_resources(api, prepared->function);
  auto fail = [&](RunStatus status, const char* call, CUresult r) {
    RunResult failed = driver_failure(api, status, call, r);
    if (!prepared->solve_error.empty())
      failed.error = "solve() left a CUDA error: " + prepared->solve_error;
    failed.resources = result.resources;
    return failed;
  };
  // The check's comparison where the tensors are (run_compare.hpp), where the job asks for one.
  std::optional<RunComparison> where;
  if (!job.compare.empty() || job.hash_inputs)
    if (auto info = cached_device_info()) {
      if (!m_state->expected) m_state->expected = std::make_shared<ExpectedOnDevice>();
      where.emplace(api, timer_helpers(m_state->helpers, api, (*info)->arch()), (*info)->sm_count,
                    *m_state->expected, *prepared);
      if (auto f = where->note_inputs()) return *f;
    }
  if (draw && !(where && where->active())) {
    result.status = RunStatus::launch_failed;
    result.error =
        "the inputs were drawn on the device, but its comparison could not start (no room "
        "for its results): nothing says they were left as drawn";
    result.environment = true;
    return result;
  }
  Event start(&api), stop(&api);
  KOPT_CU_RUN(api, RunStatus::fault, api.ctx_synchronize());
  KOPT_CU_RUN(api, RunStatus::launch_failed, api.event_record(start.get(), nullptr));
  if (CUresult r = prepared->launch(nullptr);
      r != CUDA_SUCCESS)  // a solve() can fault inside its call
    return fail(r == CUDA_ERROR_LAUNCH_FAILED || !prepared->is_solve() ? RunStatus::launch_failed
                                                                       : RunStatus::fault,
                "launch", r);
  KOPT_CU_RUN(api, RunStatus::fault, api.event_record(stop.get(), nullptr));
  KOPT_CU_RUN(api, RunStatus::fault, api.ctx_synchronize());
  float ms = 0.f;
  if (api.event_elapsed_time(&ms, start.get(), stop.get()) == CUDA_SUCCESS) result.kernel_ms = ms;
  if (where)
    if (auto f = where->settle(result)) return *f;
  // Where kopt's Python process keeps the reference's outputs, it compares: these outputs
  // shared with it, else read back to their files below and compared from there.
  if (auto f = compare_where_kept(api, *prepared, m_kept_comparer, false, result)) return *f;
  RunResult collected = collect_tensors(
      job, result, [&](std::size_t i, std::vector<std::byte>& host) -> std::optional<RunResult> {
        CUresult r = api.memcpy_dtoh(host.data(), prepared->buffers[i].get(), host.size());
        if (r != CUDA_SUCCESS) return fail(RunStatus::fault, "api.memcpy_dtoh", r);
        return std::nullopt;
      });
  if (collected.ok())
    if (auto f = compare_where_kept(api, *prepared, m_kept_comparer, true, collected)) return *f;
  return collected;
}

}  // namespace kopt::cuda
