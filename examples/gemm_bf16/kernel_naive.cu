// The starting point: one thread per output element, f32 accumulation on the CUDA cores.
#include "bf16.cuh"

extern "C" __global__ void gemm_bf16_naive(const bf16_t* A, const bf16_t* B, bf16_t* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += bf16_to_f32(A[(size_t)row * K + k]) * bf16_to_f32(B[(size_t)k * N + col]);
  C[(size_t)row * N + col] = f32_to_bf16(acc);
}
