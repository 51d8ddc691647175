// y = 2 x for the first half of the elements only; the second half is never written.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n / 2) y[i] = 2.0f * x[i];
}
