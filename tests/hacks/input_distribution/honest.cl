// Row softmax, one work-group of 256 per row: the row maximum, then the sum of exp(x - max).
#define B 256

__kernel void softmax(__global const float* x, __global float* y, int cols) {
  __local float part[B];
  int t = get_local_id(0);
  __global const float* in = x + (size_t)get_group_id(0) * cols;
  __global float* out = y + (size_t)get_group_id(0) * cols;
  float v = in[t];
  part[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = B / 2; s > 0; s /= 2) {
    if (t < s) part[t] = fmax(part[t], part[t + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float m = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float e = exp(v - m);
  part[t] = e;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = B / 2; s > 0; s /= 2) {
    if (t < s) part[t] += part[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[t] = e / part[0];
}
