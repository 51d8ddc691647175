// The OpenCL port of kernel_naive.cu: one work-item per element; stores are strided.
__kernel void transpose_naive(__global const float* in, __global float* out, int rows, int cols) {
  int c = get_global_id(0);
  int r = get_global_id(1);
  if (c < cols && r < rows) out[(long)c * rows + r] = in[(long)r * cols + c];
}
