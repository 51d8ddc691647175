// Reference: one warp per row, every sum and max in double precision.
extern "C" __global__ void softmax_ref(const float* x, float* y, int rows, int cols) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  double m = -1.0 / 0.0;
  for (int c = threadIdx.x; c < cols; c += 32) m = fmax(m, (double)in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += 32) s += exp((double)in[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int c = threadIdx.x; c < cols; c += 32) out[c] = (float)(exp((double)in[c] - m) / s);
}
