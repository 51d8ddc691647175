// The OpenCL port of kernel_naive.cu: one work-item per row.
__kernel void softmax_naive(__global const float* x, __global float* y, int rows, int cols) {
  int row = get_global_id(0);
  if (row >= rows) return;
  __global const float* in = x + (long)row * cols;
  __global float* out = y + (long)row * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  float s = 0.f;
  for (int c = 0; c < cols; ++c) s += exp(in[c] - m);
  for (int c = 0; c < cols; ++c) out[c] = exp(in[c] - m) / s;
}
