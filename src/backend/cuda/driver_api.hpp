#pragma once
// The CUDA driver API, resolved with dlsym from libcuda.so.1 (never the toolkit's stub).
#include <cuda.h>

#include <string>

#include "dynlib.hpp"

namespace kopt::cuda {

// X(member, exported symbol, prototype source)
#define KOPT_DRIVER_FUNCTIONS(X)                                                               \
  X(init, "cuInit", cuInit)                                                                    \
  X(driver_get_version, "cuDriverGetVersion", cuDriverGetVersion)                              \
  X(get_error_name, "cuGetErrorName", cuGetErrorName)                                          \
  X(get_error_string, "cuGetErrorString", cuGetErrorString)                                    \
  X(device_get, "cuDeviceGet", cuDeviceGet)                                                    \
  X(device_get_count, "cuDeviceGetCount", cuDeviceGetCount)                                    \
  X(device_get_name, "cuDeviceGetName", cuDeviceGetName)                                       \
  X(device_get_attribute, "cuDeviceGetAttribute", cuDeviceGetAttribute)                        \
  X(device_total_mem, "cuDeviceTotalMem_v2", cuDeviceTotalMem_v2)                              \
  X(device_get_pci_bus_id, "cuDeviceGetPCIBusId", cuDeviceGetPCIBusId)                         \
  X(device_get_uuid, "cuDeviceGetUuid_v2", cuDeviceGetUuid_v2)                                 \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain)                  \
  X(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease_v2)         \
  X(ctx_set_current, "cuCtxSetCurrent", cuCtxSetCurrent)                                       \
  X(ctx_synchronize, "cuCtxSynchronize", cuCtxSynchronize)                                     \
  X(mem_alloc, "cuMemAlloc_v2", cuMemAlloc_v2)                                                 \
  X(mem_free, "cuMemFree_v2", cuMemFree_v2)                                                    \
  X(mem_get_info, "cuMemGetInfo_v2", cuMemGetInfo_v2)                                          \
  X(mem_get_address_range, "cuMemGetAddressRange_v2", cuMemGetAddressRange_v2)                 \
  X(ipc_get_mem_handle, "cuIpcGetMemHandle", cuIpcGetMemHandle)                                \
  X(memcpy_htod, "cuMemcpyHtoD_v2", cuMemcpyHtoD_v2)                                           \
  X(memcpy_dtoh, "cuMemcpyDtoH_v2", cuMemcpyDtoH_v2)                                           \
  X(memset_d8, "cuMemsetD8_v2", cuMemsetD8_v2)                                                 \
  X(memset_d16, "cuMemsetD16_v2", cuMemsetD16_v2)                                              \
  X(memset_d32, "cuMemsetD32_v2", cuMemsetD32_v2)                                              \
  X(module_load_data, "cuModuleLoadData", cuModuleLoadData)                                    \
  X(module_unload, "cuModuleUnload", cuModuleUnload)                                           \
  X(module_get_function, "cuModuleGetFunction", cuModuleGetFunction)                           \
  X(func_get_attribute, "cuFuncGetAttribute", cuFuncGetAttribute)                              \
  X(func_set_attribute, "cuFuncSetAttribute", cuFuncSetAttribute)                              \
  X(launch_kernel, "cuLaunchKernel", cuLaunchKernel)                                           \
  X(event_create, "cuEventCreate", cuEventCreate)                                              \
  X(event_destroy, "cuEventDestroy_v2", cuEventDestroy_v2)                                     \
  X(event_record, "cuEventRecord", cuEventRecord)                                              \
  X(event_synchronize, "cuEventSynchronize", cuEventSynchronize)                               \
  X(event_elapsed_time, "cuEventElapsedTime_v2", cuEventElapsedTime_v2)                        \
  X(stream_create, "cuStreamCreate", cuStreamCreate)                                           \
  X(stream_destroy, "cuStreamDestroy_v2", cuStreamDestroy_v2)                                  \
  X(stream_synchronize, "cuStreamSynchronize", cuStreamSynchronize)                            \
  X(stream_wait_event, "cuStreamWaitEvent", cuStreamWaitEvent)                                 \
  X(memset_d32_async, "cuMemsetD32Async", cuMemsetD32Async)                                    \
  X(memset_d16_async, "cuMemsetD16Async", cuMemsetD16Async)                                    \
  X(memset_d8_async, "cuMemsetD8Async", cuMemsetD8Async)                                       \
  X(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync_v2)                           \
  X(mem_host_alloc, "cuMemHostAlloc", cuMemHostAlloc)                                          \
  X(mem_free_host, "cuMemFreeHost", cuMemFreeHost)                                             \
  X(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2", cuMemHostGetDevicePointer_v2) \
  X(stream_begin_capture, "cuStreamBeginCapture_v2", cuStreamBeginCapture_v2)                  \
  X(stream_end_capture, "cuStreamEndCapture", cuStreamEndCapture)                              \
  X(graph_instantiate, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags)             \
  X(graph_launch, "cuGraphLaunch", cuGraphLaunch)                                              \
  X(graph_exec_destroy, "cuGraphExecDestroy", cuGraphExecDestroy)                              \
  X(graph_destroy, "cuGraphDestroy", cuGraphDestroy)                                           \
  X(tensor_map_encode_tiled, "cuTensorMapEncodeTiled", cuTensorMapEncodeTiled)

struct DriverApi {
#define KOPT_DECLARE(member, sym, proto) decltype(&::proto) member = nullptr;
  KOPT_DRIVER_FUNCTIONS(KOPT_DECLARE)
#undef KOPT_DECLARE
  DynLib lib;

  // "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
  std::string describe(CUresult r) const;
};

// Loads libcuda.so.1 once per process. Errors are environment errors (exit 3).
Expected<const DriverApi*> driver_api();

}  // namespace kopt::cuda
