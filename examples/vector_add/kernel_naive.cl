// The OpenCL port of kernel_naive.cu: one work-item per element.
__kernel void vector_add_naive(__global const float* a, __global const float* b, __global float* c, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
