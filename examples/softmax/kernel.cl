// The OpenCL port of kernel.cu: one work-group per row, BLOCK work-items, VEC floats per
// load. The launch's shared_mem arrives as the trailing __local argument (kopt passes a
// launch's dynamic shared memory that way on OpenCL). USE_SHFL has no OpenCL 1.2 form (no
// sub-group shuffles): both of its values reduce through a local-memory tree here.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

#if VEC == 1
typedef float T;
#define VMAX(v) (v)
#define VSUM_EXP(v, m) exp((v) - (m))
#elif VEC == 2
typedef float2 T;
#define VMAX(v) fmax((v).x, (v).y)
#define VSUM_EXP(v, m) (exp((v).x - (m)) + exp((v).y - (m)))
#else
typedef float4 T;
#define VMAX(v) fmax(fmax((v).x, (v).y), fmax((v).z, (v).w))
#define VSUM_EXP(v, m) (exp((v).x - (m)) + exp((v).y - (m)) + exp((v).z - (m)) + exp((v).w - (m)))
#endif

// A tree over the work-group in `tree` (BLOCK floats); every work-item gets the result.
#define BLOCK_REDUCE(v, tree, op)                               \
  do {                                                          \
    const int t_ = get_local_id(0);                             \
    tree[t_] = v;                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                               \
    for (int s_ = BLOCK / 2; s_ > 0; s_ >>= 1) {                \
      if (t_ < s_) tree[t_] = op(tree[t_], tree[t_ + s_]);      \
      barrier(CLK_LOCAL_MEM_FENCE);                             \
    }                                                           \
    v = tree[0];                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                               \
  } while (0)
#define ADD(a, b) ((a) + (b))

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void softmax_tuned(__global const float* restrict x,
                                                                              __global float* restrict y, int rows,
                                                                              int cols, __local float* scratch) {
  __local float tree[BLOCK];
  (void)scratch;  // the CUDA kernel's per-warp partials; the tree needs all BLOCK slots
  __global const T* in = (__global const T*)(x + (long)get_group_id(0) * cols);
  __global T* out = (__global T*)(y + (long)get_group_id(0) * cols);
  const int groups = cols / VEC;

  float m = -INFINITY;
  for (int g = get_local_id(0); g < groups; g += BLOCK) m = fmax(m, VMAX(in[g]));
  BLOCK_REDUCE(m, tree, fmax);

  float s = 0.f;
  for (int g = get_local_id(0); g < groups; g += BLOCK) s += VSUM_EXP(in[g], m);
  BLOCK_REDUCE(s, tree, ADD);
  const float inv = 1.f / s;

  for (int g = get_local_id(0); g < groups; g += BLOCK) out[g] = exp(in[g] - m) * inv;
}
