#pragma once
// A function's resources as the driver reports them (authoritative over ptxas' report).
#include "driver_api.hpp"
#include "kopt/backend/build.hpp"

namespace kopt::cuda {

inline ResourceUsage function_resources(const DriverApi& api, CUfunction fn) {
  ResourceUsage r;
  auto get = [&](CUfunction_attribute at) {
    int v = -1;
    return api.func_get_attribute(&v, at, fn) == CUDA_SUCCESS ? v : -1;
  };
  r.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  r.shared_static_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  r.local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  r.const_bytes = get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  r.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  r.source = "driver";
  return r;
}

}  // namespace kopt::cuda
