// y = x / n.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = x[i] / (float)n;
}
