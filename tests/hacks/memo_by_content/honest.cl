// y = work(x), every launch.
#include "work.h"

__kernel void work_kernel(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = work(x[i]);
}
