// One block per row. Tunable: BLOCK threads, VEC floats per load (1, 2, 4).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

extern "C" __global__ void __launch_bounds__(BLOCK) rmsnorm_tuned(const float* __restrict__ x,
                                                                  const float* __restrict__ w,
                                                                  float* __restrict__ y, int rows, int cols,
                                                                  float eps) {
  using T = typename Vec<VEC>::T;
  __shared__ float warp_sums[BLOCK / 32];
  const T* in = reinterpret_cast<const T*>(x + (long long)blockIdx.x * cols);
  const T* wv = reinterpret_cast<const T*>(w);
  T* out = reinterpret_cast<T*>(y + (long long)blockIdx.x * cols);
  const int groups = cols / VEC;

  float ss = 0.f;
  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
    const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) ss += f[i] * f[i];
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < BLOCK / 32; ++i) total += warp_sums[i];
  const float scale = rsqrtf(total / cols + eps);

  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g], wt = wv[g], r;
    const float* f = reinterpret_cast<const float*>(&v);
    const float* fw = reinterpret_cast<const float*>(&wt);
    float* fr = reinterpret_cast<float*>(&r);
#pragma unroll
    for (int i = 0; i < VEC; ++i) fr[i] = f[i] * scale * fw[i];
    out[g] = r;
  }
}
