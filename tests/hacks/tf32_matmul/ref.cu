// Reference: one thread per element of C, the dot product accumulated in double.
extern "C" __global__ void gemm_ref(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < K; ++k) acc += (double)A[(long long)row * K + k] * (double)B[(long long)k * N + col];
  C[(long long)row * N + col] = (float)acc;
}
