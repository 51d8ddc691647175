#pragma once
// The devices a command runs on: which family (a CUDA GPU or an OpenCL device, chosen once
// per command by --backend), which ordinals (--gpus), how a worker for one is started, and the
// compiler that builds a problem's kernels for it (every language the family runs).
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kopt/backend/build.hpp"
#include "kopt/backend/device_family.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::evaluate {

// --backend: "cuda", "opencl", or "auto" (CUDA when the driver sees a GPU, else OpenCL when a
// device is there, else CUDA, whose errors then say what is missing). "triton" is read as
// "cuda": Triton kernels run on the CUDA GPU beside the CUDA ones.
DeviceFamily choose_device_family(std::string_view choice);

// Whether a device of the family is here (an environment Error that says why not).
Expected<void> device_present(DeviceFamily family);

// --gpus: "" (the default device alone), "all", or "N,M,...": ordinals of the family's
// devices; a device that does not exist or one named twice is bad input.
Expected<std::vector<int>> select_devices(DeviceFamily family, const std::string& gpus,
                                          int default_device);

// A worker on `device`, its stderr logged in `log_dir`.
WorkerOptions worker_options(DeviceFamily family, int device, const std::filesystem::path& log_dir);

// The compiler of a problem's kernels on this family's device, each kernel by its language:
// NVRTC (nvcc for solve() libraries) and Triton on a CUDA GPU; the device's OpenCL driver, in
// the worker that owns it, on an OpenCL device.
std::unique_ptr<Compiler> make_compiler(DeviceFamily family, WorkerClient& worker);

}  // namespace kopt::evaluate
