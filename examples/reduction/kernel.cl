// The OpenCL port of kernel.cu, with the same params: BLOCK work-items, VEC floats per load,
// ITEMS loads in flight per work-item per grid-stride step (the NDRange is set by
// BLOCKS_PER_SM in kopt.toml). USE_SHFL has no OpenCL 1.2 form (no sub-group shuffles):
// both of its values reduce through a local-memory tree here.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 4
#endif

#if VEC == 1
typedef float T;
inline float hsum(float v) { return v; }
#elif VEC == 2
typedef float2 T;
inline float hsum(float2 v) { return v.x + v.y; }
#else
typedef float4 T;
inline float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
#endif

inline void atomic_add_float(volatile __global float* p, float v) {
  union { unsigned int u; float f; } old, sum;
  do {
    old.f = *p;
    sum.f = old.f + v;
  } while (atomic_cmpxchg((volatile __global unsigned int*)p, old.u, sum.u) != old.u);
}

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void sum_tuned(__global const float* restrict x,
                                                                          __global float* total, int n) {
  __local float tree[BLOCK];
  __global const T* xv = (__global const T*)x;
  const long groups = n / VEC;
  const long stride = get_global_size(0);
  float acc[ITEMS];
  for (int k = 0; k < ITEMS; ++k) acc[k] = 0.f;
  long g = get_global_id(0);
  for (; g + (ITEMS - 1) * stride < groups; g += ITEMS * stride)
    for (int k = 0; k < ITEMS; ++k) acc[k] += hsum(xv[g + k * stride]);
  for (; g < groups; g += stride) acc[0] += hsum(xv[g]);
  float v = 0.f;
  for (int k = 0; k < ITEMS; ++k) v += acc[k];
  const int t = get_local_id(0);
  tree[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) tree[t] += tree[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) atomic_add_float(total, tree[0]);
}
