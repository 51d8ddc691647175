// y = x / 65536: the declared n, constant-folded into the kernel (a multiply, and no argument).
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = x[i] * (1.0f / 65536.0f);
}
