#pragma once
// A tiny problem whose kernel `skipping` does its work on every other launch only: the
// launch count lives in device memory (one counter per block / work-group, in the inout
// tensor `launches`, so that no input is modified), and the first launch, the one kopt check
// sees, is honest. `honest` is the same kernel without the skip. CUDA and OpenCL sources, a
// C++ reference. `skip_if_written` works only while its output looks unwritten; three more
// kernels carry the hacks that kopt check catches by itself. Written into a test's temp dir (tests/opencl, tests/gpu: skipped_work_test).
#include <filesystem>
#include <fstream>

namespace kopt::test {

inline void write_skipped_work_problem(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "kopt.toml") << R"(name = "skipped_work"
description = "y = 2 x; the kernel `skipping` does it on every other launch only"

[dims]
n = 1048576

[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "input"

[[tensors]]
name = "y"
dtype = "f32"
shape = ["n"]
role = "output"

# Launches counted per block: inout, so the checker expects exactly one launch's count.
[[tensors]]
name = "launches"
dtype = "i32"
shape = ["n / 256"]
role = "inout"
init = { kind = "constant", value = 0 }

[cost]
flops = "n"
bytes = "8 * n"

[tolerance]
f32 = { atol = 0.0, rtol = 0.0 }

[reference]
kind = "cpp"
source = "ref.cpp"
entry = "scale_ref"
args = ["x", "y", "launches", { expr = "n", dtype = "i64" }]

[[kernels]]
name = "honest"
source = ["honest.cu", "honest.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]

[[kernels]]
name = "skipping"
source = ["skipping.cu", "skipping.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]

# Works only while its output looks unwritten (a NaN at the start of its block): every launch
# kopt check makes, and the timed launches whose outputs were poisoned with NaN.
[[kernels]]
name = "skip_if_written"
source = ["skip_if_written.cu", "skip_if_written.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]

# What kopt check itself catches: an input overwritten, half the output left unwritten, the
# arithmetic done in bf16 under an f32 tolerance (docs/honesty.md).
[[kernels]]
name = "modifies_input"
source = ["modifies_input.cu", "modifies_input.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]

[[kernels]]
name = "writes_half"
source = ["writes_half.cu", "writes_half.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]

[[kernels]]
name = "low_precision"
source = ["low_precision.cu", "low_precision.cl"]
entry = "scale"
args = ["x", "y", "launches", "n"]
grid = ["n / 256"]
block = [256]
)";
  std::ofstream(dir / "ref.cpp") << R"(#include <cstdint>
extern "C" int scale_ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  std::int32_t* launches = static_cast<std::int32_t*>(args[2]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[3]);
  for (std::int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i];
  for (std::int64_t g = 0; g < n / 256; ++g) launches[g] += 1;
  return 0;
}
)";
  std::ofstream(dir / "honest.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  if (get_local_id(0) == 0) launches[get_group_id(0)] += 1;
  int i = get_global_id(0);
  if (i < n) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "skipping.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  __local int skip;
  if (get_local_id(0) == 0) {
    int count = launches[get_group_id(0)];
    launches[get_group_id(0)] = count + 1;
    skip = count & 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (skip) return;
  int i = get_global_id(0);
  if (i < n) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "skip_if_written.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  if (get_local_id(0) == 0) launches[get_group_id(0)] += 1;
  float first = y[get_group_id(0) * get_local_size(0)];
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (first == first) return;  /* a number there: the output looks done */
  int i = get_global_id(0);
  if (i < n) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "skip_if_written.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  if (threadIdx.x == 0) launches[blockIdx.x] += 1;
  float first = y[blockIdx.x * blockDim.x];
  __syncthreads();
  if (first == first) return;  // a number there: the output looks done
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "modifies_input.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  if (get_local_id(0) == 0) launches[get_group_id(0)] += 1;
  int i = get_global_id(0);
  if (i < n) { y[i] = 2.0f * x[i]; ((__global float*)x)[i] = 0.0f; }
}
)";
  std::ofstream(dir / "modifies_input.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  if (threadIdx.x == 0) launches[blockIdx.x] += 1;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = 2.0f * x[i]; const_cast<float*>(x)[i] = 0.0f; }
}
)";
  std::ofstream(dir / "writes_half.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  if (get_local_id(0) == 0) launches[get_group_id(0)] += 1;
  int i = get_global_id(0);
  if (i < n / 2) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "writes_half.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  if (threadIdx.x == 0) launches[blockIdx.x] += 1;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "low_precision.cl") << R"(__kernel void scale(__global const float* x, __global float* y, __global int* launches, int n) {
  if (get_local_id(0) == 0) launches[get_group_id(0)] += 1;
  int i = get_global_id(0);
  if (i < n) y[i] = as_float(as_uint(2.0f * x[i]) & 0xffff0000u);  /* bf16: 8 bits of mantissa */
}
)";
  std::ofstream(dir / "low_precision.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  if (threadIdx.x == 0) launches[blockIdx.x] += 1;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __uint_as_float(__float_as_uint(2.0f * x[i]) & 0xffff0000u);  // bf16: 8 bits of mantissa
}
)";
  std::ofstream(dir / "honest.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  if (threadIdx.x == 0) launches[blockIdx.x] += 1;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "skipping.cu") << R"(extern "C" __global__ void scale(const float* x, float* y, int* launches, int n) {
  __shared__ int skip;
  if (threadIdx.x == 0) {
    int count = launches[blockIdx.x];
    launches[blockIdx.x] = count + 1;
    skip = count & 1;
  }
  __syncthreads();
  if (skip) return;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";
}

}  // namespace kopt::test
