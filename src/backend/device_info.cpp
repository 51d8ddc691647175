#include "kopt/backend/device_info.hpp"

#include <fmt/format.h>

namespace kopt {
using nlohmann::json;

json to_json(const DeviceInfo& d) {
  json j{{"backend", d.backend},
         {"ordinal", d.ordinal},
         {"name", d.name},
         {"pci_bus_id", d.pci_bus_id},
         {"uuid", d.uuid},
         {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
         {"cc_major", d.cc_major},
         {"cc_minor", d.cc_minor},
         {"arch", d.arch()},
         {"sm_count", d.sm_count},
         {"l2_bytes", d.l2_bytes},
         {"memory_bytes", d.memory_bytes},
         {"memory_bus_width_bits", d.memory_bus_width_bits},
         {"max_shared_per_block_optin", d.max_shared_per_block_optin},
         {"max_shared_per_sm", d.max_shared_per_sm},
         {"max_registers_per_sm", d.max_registers_per_sm},
         {"max_threads_per_sm", d.max_threads_per_sm},
         {"warp_size", d.warp_size},
         {"max_threads_per_block", d.limits.max_threads_per_block},
         {"max_block", d.limits.max_block},
         {"max_grid", d.limits.max_grid},
         {"clocks", d.clocks},
         {"driver_cuda_version", cuda_version_string(d.driver_version)},
         {"driver_version", d.driver_version},
         {"driver_release", d.driver_release}};
  if (d.is_opencl()) {
    j["platform"] = d.platform;
    j["device_type"] = d.device_type;
    j["opencl_version"] = d.opencl_version;
  }
  if (!d.host.empty()) j["host"] = d.host;
  if (!d.machine.empty()) j["machine"] = d.machine;
  if (d.host_memory_available_bytes > 0)
    j["host_memory_available_bytes"] = d.host_memory_available_bytes;
  return j;
}

DeviceInfo device_info_from_json(const json& j) {
  DeviceInfo d;
  d.backend = j.value("backend", std::string("cuda"));
  d.ordinal = j.value("ordinal", 0);
  d.name = j.value("name", std::string{});
  d.pci_bus_id = j.value("pci_bus_id", std::string{});
  d.uuid = j.value("uuid", std::string{});
  d.cc_major = j.value("cc_major", 0);
  d.cc_minor = j.value("cc_minor", 0);
  d.sm_count = j.value("sm_count", 0);
  d.l2_bytes = j.value("l2_bytes", std::int64_t{0});
  d.memory_bytes = j.value("memory_bytes", std::int64_t{0});
  d.host_memory_available_bytes = j.value("host_memory_available_bytes", std::int64_t{0});
  d.memory_bus_width_bits = j.value("memory_bus_width_bits", 0);
  d.max_shared_per_block_optin = j.value("max_shared_per_block_optin", std::int64_t{0});
  d.max_shared_per_sm = j.value("max_shared_per_sm", std::int64_t{0});
  d.max_registers_per_sm = j.value("max_registers_per_sm", 0);
  d.max_threads_per_sm = j.value("max_threads_per_sm", 0);
  d.warp_size = j.value("warp_size", 32);
  d.limits.max_threads_per_block = j.value("max_threads_per_block", std::int64_t{1024});
  if (j.contains("max_block"))
    d.limits.max_block = j["max_block"].get<std::array<std::int64_t, 3>>();
  if (j.contains("max_grid")) d.limits.max_grid = j["max_grid"].get<std::array<std::int64_t, 3>>();
  d.limits.max_shared_per_block_optin = d.max_shared_per_block_optin;
  d.limits.sm_count = d.sm_count;
  if (j.contains("clocks")) d.clocks = j["clocks"].get<Clocks>();
  d.driver_version = j.value("driver_version", 0);
  d.driver_release = j.value("driver_release", std::string{});
  d.platform = j.value("platform", std::string{});
  d.device_type = j.value("device_type", std::string{});
  d.opencl_version = j.value("opencl_version", std::string{});
  d.host = j.value("host", std::string{});
  d.machine = j.value("machine", std::string{});
  return d;
}

std::string cuda_version_string(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string clocks_text(const Clocks& c) {
  if (!c.nvml_error.empty()) return "clocks unknown (" + c.nvml_error + ")";
  if (c.sm_mhz < 0 && c.max_sm_mhz < 0) return "clocks not read";
  return fmt::format("SM {}/{} MHz, mem {} MHz, throttle: {}", c.sm_mhz, c.max_sm_mhz, c.mem_mhz,
                     c.throttle_reasons);
}

}  // namespace kopt
