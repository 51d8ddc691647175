#pragma once
// Which kind of device a worker drives, and so which kernels it can run. The backend belongs
// to each kernel (its source's language says which); the device family only decides which of
// a problem's kernels can run here: on a CUDA GPU its CUDA C++ kernels, solve() libraries and
// Triton kernels side by side, on an OpenCL device its OpenCL C kernels.
#include <optional>
#include <string_view>
#include <vector>

#include "kopt/problem/problem.hpp"

namespace kopt {

enum class DeviceFamily { cuda, opencl };

std::string_view device_family_name(DeviceFamily f);
std::optional<DeviceFamily> parse_device_family(std::string_view name);

// The kernel languages a worker of this family runs, in the order a kernel with sources in
// several languages has one chosen.
std::vector<KernelLanguage> runnable_languages(DeviceFamily f);

}  // namespace kopt
