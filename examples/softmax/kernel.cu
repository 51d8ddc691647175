// One block per row. Tunable: BLOCK threads, VEC floats per load (1, 2, 4),
// USE_SHFL 1 (warp shuffles, then one value per warp through shared memory) or 0 (a
// shared-memory tree over the whole block).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef USE_SHFL
#define USE_SHFL 1
#endif

// V floats loaded and stored as one 32/64/128-bit access; indexed with constants after
// unrolling, so it stays in registers.
template <int V> struct alignas(4 * V) Pack { float v[V]; };

struct MaxOp { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct SumOp { __device__ float operator()(float a, float b) const { return a + b; } };

#if USE_SHFL
template <class Op>
__device__ float block_reduce(float v, Op op, float* scratch) {  // scratch: BLOCK / 32 floats
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < BLOCK / 32; ++w) v = op(v, scratch[w]);
  __syncthreads();
  return v;
}
#else
template <class Op>
__device__ float block_reduce(float v, Op op, float*) {
  __shared__ float tree[BLOCK];
  tree[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tree[threadIdx.x] = op(tree[threadIdx.x], tree[threadIdx.x + s]);
    __syncthreads();
  }
  v = tree[0];
  __syncthreads();
  return v;
}
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_tuned(const float* __restrict__ x,
                                                                  float* __restrict__ y, int rows, int cols) {
  extern __shared__ float scratch[];
  using T = Pack<VEC>;
  const T* in = reinterpret_cast<const T*>(x + (long long)blockIdx.x * cols);
  T* out = reinterpret_cast<T*>(y + (long long)blockIdx.x * cols);
  const int groups = cols / VEC;

  float m = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h)
  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
#pragma unroll
    for (int i = 0; i < VEC; ++i) m = fmaxf(m, v.v[i]);
  }
  m = block_reduce(m, MaxOp{}, scratch);

  float s = 0.f;
  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
#pragma unroll
    for (int i = 0; i < VEC; ++i) s += __expf(v.v[i] - m);
  }
  s = block_reduce(s, SumOp{}, scratch);
  const float inv = 1.f / s;

  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
    T r;
#pragma unroll
    for (int i = 0; i < VEC; ++i) r.v[i] = __expf(v.v[i] - m) * inv;
    out[g] = r;
  }
}
