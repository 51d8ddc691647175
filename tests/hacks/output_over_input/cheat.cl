// In place: x becomes 2 x (its storage used as the output's), then y is a copy of it.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) {
    __global float* inout = (__global float*)x;  // the input taken as the output
    inout[i] = 2.0f * inout[i];
    y[i] = inout[i];
  }
}
