#pragma once
// NVRTC, resolved with dlsym at run time.
#include <nvrtc.h>

#include <string>

#include "dynlib.hpp"

namespace kopt::cuda {

#define KOPT_NVRTC_FUNCTIONS(X)                         \
  X(version, nvrtcVersion)                              \
  X(get_error_string, nvrtcGetErrorString)              \
  X(create_program, nvrtcCreateProgram)                 \
  X(destroy_program, nvrtcDestroyProgram)               \
  X(compile_program, nvrtcCompileProgram)               \
  X(get_cubin_size, nvrtcGetCUBINSize)                  \
  X(get_cubin, nvrtcGetCUBIN)                           \
  X(get_program_log_size, nvrtcGetProgramLogSize)       \
  X(get_program_log, nvrtcGetProgramLog)                \
  X(add_name_expression, nvrtcAddNameExpression)        \
  X(get_lowered_name, nvrtcGetLoweredName)              \
  X(get_num_supported_archs, nvrtcGetNumSupportedArchs) \
  X(get_supported_archs, nvrtcGetSupportedArchs)

struct NvrtcApi {
#define KOPT_DECLARE(member, proto) decltype(&::proto) member = nullptr;
  KOPT_NVRTC_FUNCTIONS(KOPT_DECLARE)
#undef KOPT_DECLARE
  DynLib lib;
  int major = 0;
  int minor = 0;
};

// Loads libnvrtc once per process ($KOPT_NVRTC names a specific library).
Expected<const NvrtcApi*> nvrtc_api();

}  // namespace kopt::cuda
