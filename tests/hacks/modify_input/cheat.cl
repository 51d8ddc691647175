// y = 2 x, then x is overwritten with zeros: the input is not the caller's any more.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) {
    y[i] = 2.0f * x[i];
    ((__global float*)x)[i] = 0.0f;  // casts the const away
  }
}
