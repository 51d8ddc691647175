// y = 2 x for the first and last 256 elements; the rest gets x itself (written, but wrong).
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  if (i < 256 || i >= n - 256) y[i] = 2.0f * x[i];
  else y[i] = x[i];
}
