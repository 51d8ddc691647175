#include "opencl_api.hpp"

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kopt::opencl {

Expected<const OpenclApi*> opencl_api() {
  return load_once<OpenclApi>([]() -> Expected<std::unique_ptr<OpenclApi>> {
    auto lib =
        DynLib::open({"libOpenCL.so.1", "libOpenCL.so"}, "the OpenCL ICD loader (libOpenCL.so.1)");
    if (!lib) {
      Error e = lib.error();
      e.message +=
          ". Install an ICD loader and a driver: on Debian or Ubuntu `apt-get install "
          "ocl-icd-libopencl1 "
          "pocl-opencl-icd` (OpenCL on the CPU), or your GPU vendor's OpenCL driver";
      return Unexpected(e);
    }
    auto a = std::make_unique<OpenclApi>();
    a->lib = std::move(*lib);
    std::string missing;
    auto resolve = [&](auto& fn, const char* name) {
      if (void* s = a->lib.symbol(name))
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(s);
      else
        missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    resolve(a->get_platform_ids, "clGetPlatformIDs");
    resolve(a->get_platform_info, "clGetPlatformInfo");
    resolve(a->get_device_ids, "clGetDeviceIDs");
    resolve(a->get_device_info, "clGetDeviceInfo");
    resolve(a->create_context, "clCreateContext");
    resolve(a->release_context, "clReleaseContext");
    resolve(a->create_command_queue, "clCreateCommandQueue");
    resolve(a->release_command_queue, "clReleaseCommandQueue");
    resolve(a->create_program_with_source, "clCreateProgramWithSource");
    resolve(a->build_program, "clBuildProgram");
    resolve(a->get_program_build_info, "clGetProgramBuildInfo");
    resolve(a->release_program, "clReleaseProgram");
    resolve(a->create_kernel, "clCreateKernel");
    resolve(a->release_kernel, "clReleaseKernel");
    resolve(a->set_kernel_arg, "clSetKernelArg");
    resolve(a->get_kernel_work_group_info, "clGetKernelWorkGroupInfo");
    resolve(a->create_buffer, "clCreateBuffer");
    resolve(a->release_mem_object, "clReleaseMemObject");
    resolve(a->enqueue_write_buffer, "clEnqueueWriteBuffer");
    resolve(a->enqueue_read_buffer, "clEnqueueReadBuffer");
    resolve(a->enqueue_copy_buffer, "clEnqueueCopyBuffer");
    resolve(a->enqueue_fill_buffer, "clEnqueueFillBuffer");
    resolve(a->enqueue_map_buffer, "clEnqueueMapBuffer");
    resolve(a->enqueue_unmap_mem_object, "clEnqueueUnmapMemObject");
    resolve(a->enqueue_nd_range_kernel, "clEnqueueNDRangeKernel");
    resolve(a->finish, "clFinish");
    resolve(a->wait_for_events, "clWaitForEvents");
    resolve(a->get_event_profiling_info, "clGetEventProfilingInfo");
    resolve(a->release_event, "clReleaseEvent");
    if (!missing.empty())
      return Unexpected(
          environment_error("the OpenCL loader at " + a->lib.path() + " lacks " + missing));
    // Seen with NVIDIA's driver: initialising the ICDs cuts this process's OCL_ICD_FILENAMES
    // down to its first entry, in place. Every process started afterwards (a worker, a test's
    // kopt) then lost the GPU platform. Initialise now and put the variables back as they were.
    std::vector<std::pair<const char*, std::optional<std::string>>> saved;
    for (const char* name : {"OCL_ICD_FILENAMES", "OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH"}) {
      const char* v = std::getenv(name);
      saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    }
    cl_uint count = 0;
    a->get_platform_ids(0, nullptr, &count);
    for (const auto& [name, value] : saved) {
      const char* now = std::getenv(name);
      if (value && (!now || *value != now)) ::setenv(name, value->c_str(), 1);
      if (!value && now) ::unsetenv(name);
    }
    return a;
  });
}

std::string cl_error_name(cl_int code) {
  static const std::pair<cl_int, const char*> k_names[] = {
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_PROFILING_INFO_NOT_AVAILABLE, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
       "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
      {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_PROGRAM, "CL_INVALID_PROGRAM"},
      {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {CL_INVALID_EVENT, "CL_INVALID_EVENT"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
  };
  for (const auto& [c, n] : k_names)
    if (c == code) return std::string(n) + " (" + std::to_string(code) + ")";
  return "OpenCL error " + std::to_string(code);
}

}  // namespace kopt::opencl
