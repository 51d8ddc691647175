// y = 2 x, lazily: launch k (from the 9th on) writes only the elements whose 64-element slice
// number is k modulo 4; the other three quarters keep what earlier launches left in y.
__global int g_launches[1 << 16];  // launches so far, per work-group; never reset

__kernel void scale(__global const float* x, __global float* y, int n) {
  int g = get_group_id(0);
  int launch = g_launches[g] + 1;
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0) g_launches[g] = launch;
  int i = get_global_id(0);
  if (i >= n) return;
  if (launch > 8 && (i / 64) % 4 != launch % 4) return;
  y[i] = 2.0f * x[i];
}
