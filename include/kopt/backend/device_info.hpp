#pragma once
// What kopt knows about one GPU: identity, limits, and clocks as NVML reports them.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kopt/problem/launch.hpp"

namespace kopt {

struct Clocks {
  std::int64_t sm_mhz = -1;  // -1: unknown
  std::int64_t mem_mhz = -1;
  std::int64_t max_sm_mhz = -1;
  std::int64_t max_mem_mhz = -1;
  std::uint64_t throttle_mask = 0;
  std::string throttle_reasons;  // "none", or names joined by ','
  std::int64_t temperature_c = -1;
  double power_w = -1.0;
  std::string nvml_error;  // why the fields above are unknown, if they are
};

struct DeviceInfo {
  std::string backend = "cuda";  // "cuda" or "opencl"
  int ordinal = 0;
  std::string name;
  std::string pci_bus_id;
  // "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", as CUDA_VISIBLE_DEVICES and nvidia-smi name the
  // device; empty off CUDA.
  std::string uuid;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  int memory_bus_width_bits = 0;
  std::int64_t max_shared_per_block_optin = 0;
  std::int64_t max_shared_per_sm = 0;
  int max_registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int warp_size = 32;
  DeviceLimits limits;
  Clocks clocks;
  int driver_version = 0;      // e.g. 13000 for CUDA 13.0
  std::string driver_release;  // NVML's "580.82.07"; OpenCL: CL_DRIVER_VERSION
  // OpenCL only: the platform, the device type ("gpu", "cpu", "accelerator") and its version.
  std::string platform;
  std::string device_type;
  std::string opencl_version;
  // Where the worker runs when it is not this host's (a Ray actor's node: "node 3f2a… on
  // HOSTNAME"); empty for a local worker.
  std::string host;
  // The hostname of that node's machine (several Ray nodes may share one); empty: this host.
  std::string machine;
  // The worker's host memory still available when the worker described its device
  // (MemAvailable; 0: unknown): what a batch's host copies must fit in.
  std::int64_t host_memory_available_bytes = 0;

  bool is_opencl() const { return backend == "opencl"; }
  // An OpenCL CPU device is the host itself: its buffers are host memory (memory_bytes is the
  // host's), and its rates are shared with everything else the host runs.
  bool is_host_cpu() const { return is_opencl() && device_type == "cpu"; }
  // What kernels are built for: "sm_90", or "opencl" (the driver compiles for its device).
  std::string arch() const {
    return is_opencl() ? "opencl" : "sm_" + std::to_string(cc_major * 10 + cc_minor);
  }
  // What the experience DB files outcomes under: the architecture of a CUDA GPU ("sm_90"),
  // the device's own name for OpenCL ("pthread-skylake", "gfx942"), which has no compute
  // capability (it read "sm_0").
  std::string chip() const { return is_opencl() ? name : arch(); }
};

nlohmann::json to_json(const DeviceInfo& d);
// "SM 1980/1980 MHz, mem 2619 MHz, throttle: none", or why the clocks are unknown.
std::string clocks_text(const Clocks& c);
DeviceInfo device_info_from_json(const nlohmann::json& j);
// JSON with the member names as keys; missing keys keep their defaults.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Clocks, sm_mhz, mem_mhz, max_sm_mhz, max_mem_mhz,
                                                throttle_mask, throttle_reasons, temperature_c,
                                                power_w, nvml_error)

std::string cuda_version_string(int version);  // 13000 -> "13.0"

}  // namespace kopt
