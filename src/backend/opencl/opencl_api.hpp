#pragma once
// The OpenCL entry points kopt calls, loaded at run time from the ICD loader
// (libOpenCL.so.1), so kopt starts where no OpenCL is installed (docs/architecture.md §2).
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <string>

#include "kopt/core/dynlib.hpp"

namespace kopt::opencl {

struct OpenclApi {
  decltype(&::clGetPlatformIDs) get_platform_ids = nullptr;
  decltype(&::clGetPlatformInfo) get_platform_info = nullptr;
  decltype(&::clGetDeviceIDs) get_device_ids = nullptr;
  decltype(&::clGetDeviceInfo) get_device_info = nullptr;
  decltype(&::clCreateContext) create_context = nullptr;
  decltype(&::clReleaseContext) release_context = nullptr;
  decltype(&::clCreateCommandQueue) create_command_queue = nullptr;
  decltype(&::clReleaseCommandQueue) release_command_queue = nullptr;
  decltype(&::clCreateProgramWithSource) create_program_with_source = nullptr;
  decltype(&::clBuildProgram) build_program = nullptr;
  decltype(&::clGetProgramBuildInfo) get_program_build_info = nullptr;
  decltype(&::clReleaseProgram) release_program = nullptr;
  decltype(&::clCreateKernel) create_kernel = nullptr;
  decltype(&::clReleaseKernel) release_kernel = nullptr;
  decltype(&::clSetKernelArg) set_kernel_arg = nullptr;
  decltype(&::clGetKernelWorkGroupInfo) get_kernel_work_group_info = nullptr;
  decltype(&::clCreateBuffer) create_buffer = nullptr;
  decltype(&::clReleaseMemObject) release_mem_object = nullptr;
  decltype(&::clEnqueueWriteBuffer) enqueue_write_buffer = nullptr;
  decltype(&::clEnqueueReadBuffer) enqueue_read_buffer = nullptr;
  decltype(&::clEnqueueCopyBuffer) enqueue_copy_buffer = nullptr;
  decltype(&::clEnqueueFillBuffer) enqueue_fill_buffer = nullptr;
  decltype(&::clEnqueueMapBuffer) enqueue_map_buffer = nullptr;
  decltype(&::clEnqueueUnmapMemObject) enqueue_unmap_mem_object = nullptr;
  decltype(&::clEnqueueNDRangeKernel) enqueue_nd_range_kernel = nullptr;
  decltype(&::clFinish) finish = nullptr;
  decltype(&::clWaitForEvents) wait_for_events = nullptr;
  decltype(&::clGetEventProfilingInfo) get_event_profiling_info = nullptr;
  decltype(&::clReleaseEvent) release_event = nullptr;
  DynLib lib;
};

// Loads the ICD loader once per process. The error says what to install (exit 3).
Expected<const OpenclApi*> opencl_api();

// "CL_BUILD_PROGRAM_FAILURE (-11)".
std::string cl_error_name(cl_int code);

}  // namespace kopt::opencl
