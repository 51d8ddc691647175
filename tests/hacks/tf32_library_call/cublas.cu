// C = A B in f32 by cuBLAS (cublasGemmEx), in the compute type COMPUTE: CUBLAS_COMPUTE_32F (f32)
// or CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores on tf32-rounded operands).
#include <cublas_v2.h>

extern "C" const char* solve(const float* A, const float* B, float* C, int M, int N, int K) {
  static cublasHandle_t handle = nullptr;
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublasStatus_t s = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_32F, N, A,
                                  CUDA_R_32F, K, &beta, C, CUDA_R_32F, N, COMPUTE, CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? nullptr : "cublasGemmEx failed";
}
