// Grid-stride accumulation in registers, then a block reduction and one atomic per block.
// Tunable: BLOCK, VEC (floats per load), ITEMS (independent loads in flight per step),
// USE_SHFL (warp shuffles vs a shared-memory tree). The grid is chosen in kopt.toml.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef USE_SHFL
#define USE_SHFL 1
#endif

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

__device__ inline float hsum(float v) { return v; }
__device__ inline float hsum(float2 v) { return v.x + v.y; }
__device__ inline float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

extern "C" __global__ void __launch_bounds__(BLOCK) sum_tuned(const float* __restrict__ x, float* total, int n) {
  using T = typename Vec<VEC>::T;
  const T* xv = reinterpret_cast<const T*>(x);
  const long long groups = n / VEC;
  const long long stride = (long long)gridDim.x * BLOCK;
  float acc[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) acc[k] = 0.f;
  long long g = (long long)blockIdx.x * BLOCK + threadIdx.x;
  for (; g + (ITEMS - 1) * stride < groups; g += ITEMS * stride) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) acc[k] += hsum(xv[g + k * stride]);
  }
  for (; g < groups; g += stride) acc[0] += hsum(xv[g]);
  float v = 0.f;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) v += acc[k];

#if USE_SHFL
  __shared__ float warp_sums[BLOCK / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) atomicAdd(total, v);
  }
#else
  __shared__ float tree[BLOCK];
  tree[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tree[threadIdx.x] += tree[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, tree[0]);
#endif
}
