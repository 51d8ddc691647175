#pragma once
// A tiny problem, y = 2 x, with one kernel per hack of docs/honesty.md, each in CUDA and
// OpenCL (a C++ reference). Every kernel counts its launches per block in device memory (the
// inout tensor `launches`, so that no input is modified); the first launch, the one kopt
// check sees, is honest wherever the hack depends on the count.
//   honest            no hack
//   skipping          does its work on every other launch only
//   skip_if_written   works only while its output looks unwritten (a NaN at its block's start)
//   modifies_input    overwrites x after reading it
//   writes_half       leaves the second half of y unwritten
//   low_precision     rounds y to bf16 (8 bits of mantissa) under an f32 tolerance
// Written into a test's temp dir (tests/opencl, tests/gpu: skipped_work_test).
#include <filesystem>
#include <fstream>
#include <string>

namespace kopt::test {

struct HackKernel {
  const char* name;
  const char* cuda;  // the body after the launch count; i is the element
  const char* opencl;
};

inline const HackKernel k_hack_kernels[] = {
    {"honest", "  if (i < n) y[i] = 2.0f * x[i];", "  if (i < n) y[i] = 2.0f * x[i];"},
    {"skipping",
     "  __shared__ int skip;  // launches counted so far, this one included: 1, 2, 3, ...\n  if "
     "(threadIdx.x == 0) skip = !(launches[blockIdx.x] & 1);\n"
     "  __syncthreads();\n  if (skip) return;\n  if (i < n) y[i] = 2.0f * x[i];",
     "  __local int skip;\n  if (get_local_id(0) == 0) skip = !(launches[get_group_id(0)] & 1);\n"
     "  barrier(CLK_LOCAL_MEM_FENCE);\n  if (skip) return;\n  if (i < n) y[i] = 2.0f * x[i];"},
    {"skip_if_written",
     "  float first = y[blockIdx.x * blockDim.x];\n  __syncthreads();\n"
     "  if (first == first) return;  // a number there: the output looks done\n  if (i < n) y[i] = "
     "2.0f * x[i];",
     "  float first = y[get_group_id(0) * get_local_size(0)];\n  barrier(CLK_GLOBAL_MEM_FENCE);\n"
     "  if (first == first) return;\n  if (i < n) y[i] = 2.0f * x[i];"},
    {"modifies_input", "  if (i < n) { y[i] = 2.0f * x[i]; const_cast<float*>(x)[i] = 0.0f; }",
     "  if (i < n) { y[i] = 2.0f * x[i]; ((__global float*)x)[i] = 0.0f; }"},
    {"writes_half", "  if (i < n / 2) y[i] = 2.0f * x[i];", "  if (i < n / 2) y[i] = 2.0f * x[i];"},
    {"low_precision",
     "  if (i < n) y[i] = __uint_as_float(__float_as_uint(2.0f * x[i]) & 0xffff0000u);",
     "  if (i < n) y[i] = as_float(as_uint(2.0f * x[i]) & 0xffff0000u);"},
};

inline void write_skipped_work_problem(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream toml(dir / "kopt.toml");
  toml << R"(name = "skipped_work"
description = "y = 2 x, with one kernel per hack of docs/honesty.md"

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
)";
  for (const HackKernel& k : k_hack_kernels) {
    std::string name = k.name;
    toml << "\n[[kernels]]\nname = \"" << name << "\"\nsource = [\"" << name << ".cu\", \"" << name
         << ".cl\"]\nentry = \"scale\"\nargs = [\"x\", \"y\", \"launches\", \"n\"]\ngrid = [\"n / "
            "256\"]\nblock = [256]\n";
    std::ofstream(dir / (name + ".cu"))
        << "extern \"C\" __global__ void scale(const float* x, float* y, int* launches, int n) {\n"
        << "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        << "  if (threadIdx.x == 0) launches[blockIdx.x] += 1;\n  __syncthreads();\n"
        << k.cuda << "\n}\n";
    std::ofstream(dir / (name + ".cl")) << "__kernel void scale(__global const float* x, __global "
                                           "float* y, __global int* launches, int n) {\n"
                                        << "  int i = get_global_id(0);\n"
                                        << "  if (get_local_id(0) == 0) launches[get_group_id(0)] "
                                           "+= 1;\n  barrier(CLK_GLOBAL_MEM_FENCE);\n"
                                        << k.opencl << "\n}\n";
  }
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
}

}  // namespace kopt::test
