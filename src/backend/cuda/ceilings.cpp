// CudaExecutor::ceilings: what the device really sustains, for the roofline.
//   dram_copy   bytes read + written per second: the best of dram_memcpy, dram_copy_kernel and
//               dram_copy_cold, its method naming the winner (copy_ceilings.cpp says why three)
//   fp32_fma    a kernel of independent FMA chains filling every SM, 2 FLOP per FMA
//   tensor_*    cuBLAS GEMM 8192^3 (f16, bf16 with f32 accumulation; tf32 from f32 inputs)
//   tensor_fp8  cuBLASLt GEMM 8192^3, e4m3 in, bf16 out, on cc >= 8.9 (fp8_ceiling.cpp)
// Each figure keeps the best and the median of its samples.
#include <cublas_api.h>

#include <algorithm>

#include "ceiling_timing.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::cuda {
namespace {

constexpr const char* k_fma_source = R"(
extern "C" __global__ void kopt_fma_rate(float* out, int iters, float a, float b) {
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = threadIdx.x * 0.001f + j;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u)
#pragma unroll
      for (int j = 0; j < 8; ++j) x[j] = fmaf(x[j], a, b);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += x[j];
  if (s == 12345.678f) out[threadIdx.x] = s;  // keeps the chains alive, never true in practice
}
)";

// cuBLAS, loaded at run time like every other CUDA library kopt uses.
struct CublasApi {
  DynLib lib;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
};

Expected<const CublasApi*> cublas_api() {
  return load_once<CublasApi>([]() -> Expected<std::unique_ptr<CublasApi>> {
    auto lib = DynLib::open(
        toolkit_library_candidates({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}),
        "cuBLAS (libcublas.so)");
    if (!lib) return Unexpected(lib.error());
    auto a = std::make_unique<CublasApi>();
    a->lib = std::move(*lib);
    a->create = reinterpret_cast<decltype(a->create)>(a->lib.symbol("cublasCreate_v2"));
    a->destroy = reinterpret_cast<decltype(a->destroy)>(a->lib.symbol("cublasDestroy_v2"));
    a->set_stream = reinterpret_cast<decltype(a->set_stream)>(a->lib.symbol("cublasSetStream_v2"));
    a->gemm_ex = reinterpret_cast<decltype(a->gemm_ex)>(a->lib.symbol("cublasGemmEx"));
    if (!a->create || !a->destroy || !a->set_stream || !a->gemm_ex)
      return Unexpected(
          environment_error("cuBLAS at " + a->lib.path() + " lacks an expected entry point"));
    return a;
  });
}

Ceiling fma_ceiling(const DriverApi& api, CUstream stream, const DeviceInfo& dev) {
  auto module =
      load_builtin_module(api, dev.arch(), "kopt_fma_rate", k_fma_source, "kopt_fma_rate");
  if (!module)
    return Ceiling{"fp32_fma", "FLOP/s", 0, 0, "", "cannot build or load the FMA kernel"};
  CUfunction fn = nullptr;
  api.module_get_function(&fn, module->get(), "kopt_fma_rate");
  CUdeviceptr out = 0;
  api.mem_alloc(&out, 1024 * sizeof(float));
  DeviceBuffer out_buf(&api, out);
  int iters = 2048;
  float a = 0.999f, b = 0.001f;
  void* params[] = {&out, &iters, &a, &b};
  const unsigned blocks = static_cast<unsigned>(dev.sm_count) * 8, threads = 256;
  auto t = time_runs(
      api, stream,
      [&] {
        return api.launch_kernel(fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr);
      },
      3, 20);
  double flops = 2.0 * 8 * 16 * iters * static_cast<double>(blocks) * threads;
  return ceiling_from_times("fp32_fma", "FLOP/s", flops, t,
                            "8 independent FMA chains per thread, 8 blocks of 256 per SM");
}

Ceiling gemm_ceiling(const DriverApi& api, CUstream stream, const CublasApi& blas,
                     cublasHandle_t handle, const std::string& name, DType in, cudaDataType type,
                     cublasComputeType_t compute) {
  const int n = 8192;
  const std::size_t elems = std::size_t{n} * n;
  const std::size_t in_bytes = elems * dtype_size(in);
  CUdeviceptr pa = 0, pb = 0, pc = 0;
  if (api.mem_alloc(&pa, in_bytes) != CUDA_SUCCESS ||
      api.mem_alloc(&pb, in_bytes) != CUDA_SUCCESS ||
      api.mem_alloc(&pc, elems * dtype_size(in)) != CUDA_SUCCESS)
    return Ceiling{name, "FLOP/s", 0, 0, "", "cannot allocate the matrices"};
  DeviceBuffer A(&api, pa), B(&api, pb), C(&api, pc);
  // Random operands in [-1, 1): real bit patterns, not zeros (power, and so clocks, depend on
  // them).
  TensorSpec spec;
  spec.name = name;
  spec.dtype = in;
  spec.init = {InitKind::uniform, -1.0, 1.0};
  HostTensor h = generate_tensor(spec, {static_cast<std::int64_t>(elems)}, 1);
  api.memcpy_htod(pa, h.data.data(), in_bytes);
  api.memcpy_htod(pb, h.data.data(), in_bytes);
  float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  auto t = time_runs(
      api, stream,
      [&] {
        status =
            blas.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                         reinterpret_cast<void*>(pa), type, n, reinterpret_cast<void*>(pb), type, n,
                         &beta, reinterpret_cast<void*>(pc), type, n, compute, CUBLAS_GEMM_DEFAULT);
        return CUDA_SUCCESS;
      },
      3, 10);
  if (status != CUBLAS_STATUS_SUCCESS)
    return Ceiling{name, "FLOP/s", 0,
                   0,    "",       "cublasGemmEx failed with status " + std::to_string(status)};
  return ceiling_from_times(name, "FLOP/s", 2.0 * n * n * static_cast<double>(n), t,
                            "cublasGemmEx " + std::to_string(n) + "^3, f32 accumulation");
}

}  // namespace

CeilingsResult CudaExecutor::ceilings() {
  const DriverApi& api = *m_state->api;
  CeilingsResult result;
  auto info = cached_device_info();
  if (!info) {
    result.status = RunStatus::launch_failed;
    result.error = info.error().message;
    return result;
  }
  const DeviceInfo& dev = **info;
  result.clocks_before = read_clocks(dev.pci_bus_id);
  Stream stream(&api);
  for (Ceiling& c : copy_ceilings(api, stream.get(), dev)) result.ceilings.push_back(std::move(c));
  result.ceilings.push_back(fma_ceiling(api, stream.get(), dev));
  auto blas = cublas_api();
  cublasHandle_t handle = nullptr;
  std::string blas_error = blas ? "" : blas.error().message;
  if (blas && (*blas)->create(&handle) != CUBLAS_STATUS_SUCCESS) blas_error = "cublasCreate failed";
  struct Gemm {
    const char* name;
    DType in;
    cudaDataType type;
    cublasComputeType_t compute;
    int min_cc;
  };
  const Gemm gemms[] = {{"tensor_f16", DType::f16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 70},
                        {"tensor_bf16", DType::bf16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 80},
                        {"tensor_tf32", DType::f32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 80}};
  for (const Gemm& g : gemms) {
    if (dev.cc_major * 10 + dev.cc_minor < g.min_cc) continue;  // the device has no such unit
    if (!blas_error.empty()) {
      result.ceilings.push_back(Ceiling{g.name, "FLOP/s", 0, 0, "", blas_error});
      continue;
    }
    (*blas)->set_stream(handle, reinterpret_cast<cudaStream_t>(stream.get()));
    result.ceilings.push_back(
        gemm_ceiling(api, stream.get(), **blas, handle, g.name, g.in, g.type, g.compute));
  }
  if (dev.cc_major * 10 + dev.cc_minor >= 89)
    result.ceilings.push_back(fp8_ceiling(api, stream.get()));
  if (handle) (*blas)->destroy(handle);
  result.clocks_after = read_clocks(dev.pci_bus_id);
  return result;
}

}  // namespace kopt::cuda
