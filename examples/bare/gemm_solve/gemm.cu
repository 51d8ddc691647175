// C = A @ B in f32 under the solve() contract of the agent skills: a host function with every
// pointer non-const, launching its kernel and waiting for it. No kopt.toml: run
//   kopt optimize examples/bare/gemm_solve/gemm.cu --dims M=4096,N=4096,K=4096
// and kopt infers the problem from this file and ref.py (A, B inputs and C the output, learned
// by running reference(); the shapes from the GEMM convention A[M, K] B[K, N] C[M, N]).
#include <cuda_runtime.h>

#ifndef TILE
#define TILE 32
#endif

__global__ void gemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = row < M && ka < K ? A[(size_t)row * K + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = kb < K && col < N ? B[(size_t)kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

extern "C" void solve(float* A, float* B, float* C, int M, int N, int K) {
  dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  gemm_tiled<<<grid, block>>>(A, B, C, M, N, K);
  cudaDeviceSynchronize();
}
