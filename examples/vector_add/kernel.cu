// Tunable: BLOCK threads, VEC elements per access (1, 2 or 4 -> 32/64/128-bit loads),
// GRID_STRIDE 0 (one element group per thread) or 1 (a fixed grid loops over the data).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef GRID_STRIDE
#define GRID_STRIDE 0
#endif

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

__device__ inline float add(float x, float y) { return x + y; }
__device__ inline float2 add(float2 x, float2 y) { return make_float2(x.x + y.x, x.y + y.y); }
__device__ inline float4 add(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

extern "C" __global__ void __launch_bounds__(BLOCK) vector_add(const float* __restrict__ a,
                                                               const float* __restrict__ b,
                                                               float* __restrict__ c, int n) {
  using T = typename Vec<VEC>::T;
  const int groups = n / VEC;
  const T* av = reinterpret_cast<const T*>(a);
  const T* bv = reinterpret_cast<const T*>(b);
  T* cv = reinterpret_cast<T*>(c);
  int g = blockIdx.x * BLOCK + threadIdx.x;
#if GRID_STRIDE
  for (; g < groups; g += gridDim.x * BLOCK) cv[g] = add(av[g], bv[g]);
#else
  if (g < groups) cv[g] = add(av[g], bv[g]);
#endif
}
