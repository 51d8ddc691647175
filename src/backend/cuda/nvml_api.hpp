#pragma once
// The few NVML entry points kopt reads (clocks, throttle reasons, memory in use), declared here
// because the toolkit does not always ship nvml.h; the C ABI is stable. Loaded with dlopen at run
// time.
#include <string>

#include "dynlib.hpp"

namespace kopt::cuda {

using NvmlReturn = int;  // NVML_SUCCESS == 0
using NvmlDevice = struct NvmlDeviceOpaque*;
enum NvmlClock { nvml_clock_graphics = 0, nvml_clock_sm = 1, nvml_clock_mem = 2 };
struct NvmlMemory {
  unsigned long long total, free, used;
};

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;                                      // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                  // nvmlShutdown
  const char* (*error_string)(NvmlReturn) = nullptr;                   // nvmlErrorString
  NvmlReturn (*system_get_driver_version)(char*, unsigned) = nullptr;  // nvmlSystemGetDriverVersion
  NvmlReturn (*device_get_handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;  // _v2
  NvmlReturn (*device_get_clock_info)(NvmlDevice, int,
                                      unsigned*) = nullptr;  // nvmlDeviceGetClockInfo
  NvmlReturn (*device_get_max_clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*device_get_throttle_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*device_get_temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*device_get_power_usage)(NvmlDevice, unsigned*) = nullptr;
  // nvmlDeviceGetMemoryInfo (nvmlMemory_t: total, free, used bytes); null where NVML lacks it.
  NvmlReturn (*device_get_memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  DynLib lib;
};

// Loads and initializes NVML once per process.
Expected<const NvmlApi*> nvml_api();

// Names of the bits of nvmlDeviceGetCurrentClocksEventReasons, e.g. "sw_power_cap".
std::string throttle_reason_names(unsigned long long mask);

}  // namespace kopt::cuda
