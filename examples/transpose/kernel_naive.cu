// One element per thread: reads coalesced, writes strided by `rows`.
extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (c < cols && r < rows) out[(long long)c * rows + r] = in[(long long)r * cols + c];
}
