#pragma once
// Skips a test, saying why, where there is no usable CUDA driver and device.
// A macro, not a function: GTEST_SKIP() returns from the function it is written in.
#include <gtest/gtest.h>

#include "kopt/backend/cuda/executor.hpp"

#define KOPT_SKIP_WITHOUT_GPU()                                    \
  if (auto kopt_probe = ::kopt::cuda::probe_driver(); !kopt_probe) \
  GTEST_SKIP() << "no usable CUDA device: " << kopt_probe.error().message
