// The OpenCL port of kernel_naive.cu: an interleaved tree in local memory, then one atomic
// add per group. OpenCL 1.2 has no float atomic add: a compare-and-swap loop on the bits.
inline void atomic_add_float(volatile __global float* p, float v) {
  union { unsigned int u; float f; } old, sum;
  do {
    old.f = *p;
    sum.f = old.f + v;
  } while (atomic_cmpxchg((volatile __global unsigned int*)p, old.u, sum.u) != old.u);
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void sum_naive(__global const float* x,
                                                                        __global float* total, int n) {
  __local float s[256];
  const int t = get_local_id(0);
  int i = get_global_id(0);
  s[t] = i < n ? x[i] : 0.f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = 1; stride < 256; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) atomic_add_float(total, s[0]);
}
