#pragma once
// Skips a test, saying why, where no OpenCL device is installed (CI installs PoCL, so
// these tests run there for real).
#include <gtest/gtest.h>

#include "kopt/backend/opencl/opencl.hpp"

#define KOPT_SKIP_WITHOUT_OPENCL()                                              \
  if (auto kopt_devices = ::kopt::opencl::list_opencl_devices(); !kopt_devices) \
  GTEST_SKIP() << "no OpenCL device: " << kopt_devices.error().message
