#include "nvml_api.hpp"

#include <utility>

namespace kopt::cuda {

Expected<const NvmlApi*> nvml_api() {
  return load_once<NvmlApi>([]() -> Expected<std::unique_ptr<NvmlApi>> {
    auto lib = DynLib::open({"libnvidia-ml.so.1"}, "NVML (libnvidia-ml.so.1)");
    if (!lib) return Unexpected(lib.error());
    auto a = std::make_unique<NvmlApi>();
    a->lib = std::move(*lib);
    auto resolve = [&](auto& fn, std::initializer_list<const char*> names) {
      for (const char* n : names)
        if (void* s = a->lib.symbol(n)) {
          fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(s);
          return true;
        }
      return false;
    };
    bool ok =
        resolve(a->init, {"nvmlInit_v2"}) && resolve(a->shutdown, {"nvmlShutdown"}) &&
        resolve(a->error_string, {"nvmlErrorString"}) &&
        resolve(a->system_get_driver_version, {"nvmlSystemGetDriverVersion"}) &&
        resolve(a->device_get_handle_by_pci_bus_id, {"nvmlDeviceGetHandleByPciBusId_v2"}) &&
        resolve(a->device_get_clock_info, {"nvmlDeviceGetClockInfo"}) &&
        resolve(a->device_get_max_clock_info, {"nvmlDeviceGetMaxClockInfo"}) &&
        resolve(a->device_get_throttle_reasons, {"nvmlDeviceGetCurrentClocksEventReasons",
                                                 "nvmlDeviceGetCurrentClocksThrottleReasons"}) &&
        resolve(a->device_get_temperature, {"nvmlDeviceGetTemperature"}) &&
        resolve(a->device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
    if (!ok)
      return Unexpected(
          environment_error("NVML at " + a->lib.path() + " lacks an expected entry point"));
    resolve(a->device_get_memory_info, {"nvmlDeviceGetMemoryInfo"});
    if (NvmlReturn r = a->init(); r != 0)
      return Unexpected(environment_error(std::string("nvmlInit failed: ") + a->error_string(r)));
    return a;
  });
}

std::string throttle_reason_names(unsigned long long mask) {
  static const std::pair<unsigned long long, const char*> k_bits[] = {
      {0x1ull, "gpu_idle"},
      {0x2ull, "applications_clocks_setting"},
      {0x4ull, "sw_power_cap"},
      {0x8ull, "hw_slowdown"},
      {0x10ull, "sync_boost"},
      {0x20ull, "sw_thermal_slowdown"},
      {0x40ull, "hw_thermal_slowdown"},
      {0x80ull, "hw_power_brake_slowdown"},
      {0x100ull, "display_clock_setting"}};
  std::string out;
  for (const auto& [bit, name] : k_bits)
    if (mask & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "none" : out;
}

}  // namespace kopt::cuda
