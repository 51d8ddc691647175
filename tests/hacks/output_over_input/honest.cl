// y = 2 x, every launch.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = 2.0f * x[i];
}
