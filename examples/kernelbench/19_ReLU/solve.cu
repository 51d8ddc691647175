// ReLU under the solve() contract of existing kernel skills: a host function that launches
// its own kernel on the default stream and waits for it. kopt reads the signature: x is
// const (an input), out is an output, batch_size and dim are dims of kopt.toml.
#include <cuda_runtime.h>

#ifndef THREADS
#define THREADS 256
#endif

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f);
}

extern "C" void solve(const float* x, float* out, int batch_size, int dim) {
  int n = batch_size * dim;
  relu_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, out, n);
  cudaDeviceSynchronize();
}
