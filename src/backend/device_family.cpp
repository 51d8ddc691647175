#include "kopt/backend/device_family.hpp"

namespace kopt {

std::string_view device_family_name(DeviceFamily f) {
  return f == DeviceFamily::opencl ? "opencl" : "cuda";
}

std::optional<DeviceFamily> parse_device_family(std::string_view name) {
  if (name == "cuda") return DeviceFamily::cuda;
  if (name == "opencl") return DeviceFamily::opencl;
  return std::nullopt;
}

std::vector<KernelLanguage> runnable_languages(DeviceFamily f) {
  if (f == DeviceFamily::opencl) return {KernelLanguage::opencl};
  return {KernelLanguage::cuda, KernelLanguage::triton};
}

}  // namespace kopt
