// Reference: one thread per output element, the exact products of the bf16 inputs summed in
// double, rounded once to bf16.
#include "bf16.cuh"

extern "C" __global__ void gemm_ref(const bf16_t* A, const bf16_t* B, bf16_t* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += (double)bf16_to_f32(A[(size_t)row * K + k]) * (double)bf16_to_f32(B[(size_t)k * N + col]);
  C[(size_t)row * N + col] = f32_to_bf16((float)acc);
}
