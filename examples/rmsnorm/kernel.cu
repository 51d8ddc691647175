// One block per row. Tunable: BLOCK threads, VEC floats per load (1, 2, 4).
// No __launch_bounds__: on sm_80 it makes ptxas aim at full occupancy (32 registers) and spill.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

// V floats loaded and stored as one 32/64/128-bit access; indexed with constants after
// unrolling, so it stays in registers.
template <int V> struct alignas(4 * V) Pack { float v[V]; };

extern "C" __global__ void rmsnorm_tuned(const float* __restrict__ x,
                                                                  const float* __restrict__ w,
                                                                  float* __restrict__ y, int rows, int cols,
                                                                  float eps) {
  using T = Pack<VEC>;
  __shared__ float warp_sums[BLOCK / 32];
  const T* in = reinterpret_cast<const T*>(x + (long long)blockIdx.x * cols);
  const T* wv = reinterpret_cast<const T*>(w);
  T* out = reinterpret_cast<T*>(y + (long long)blockIdx.x * cols);
  const int groups = cols / VEC;

  float ss = 0.f;
  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
#pragma unroll
    for (int i = 0; i < VEC; ++i) ss += v.v[i] * v.v[i];
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
#pragma unroll
    for (int i = 0; i < VEC; ++i) r.v[i] = v.v[i] * scale * wt.v[i];
    out[g] = r;
  }
}
