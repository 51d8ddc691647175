// Softmax over each row of x[rows, cols] in two passes instead of three: one block per row;
// each thread keeps a running (max, sum of exp) over its elements, the block merges the
// pairs (warp shuffles, then one pair per warp), and the second pass writes exp(x - max) / sum.
// Tunable: BLOCK threads, VEC floats per load (1, 2, 4).
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef VEC
#define VEC 4
#endif

template <int V> struct alignas(4 * V) Pack { float v[V]; };

// (m, s) then (m2, s2): the sum of exp relative to the larger max.
__device__ inline void merge(float& m, float& s, float m2, float s2) {
  float hi = fmaxf(m, m2);
  s = s * __expf(m - hi) + s2 * __expf(m2 - hi);
  m = hi;
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_online(const float* __restrict__ x,
                                                                   float* __restrict__ y, int cols) {
  __shared__ float wm[BLOCK / 32], ws[BLOCK / 32];
  using T = Pack<VEC>;
  const T* in = reinterpret_cast<const T*>(x + (long long)blockIdx.x * cols);
  T* out = reinterpret_cast<T*>(y + (long long)blockIdx.x * cols);
  const int groups = cols / VEC;

  float m = -3.402823466e38f, s = 0.f;
  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
    float local = v.v[0];
#pragma unroll
    for (int k = 1; k < VEC; ++k) local = fmaxf(local, v.v[k]);
    float add = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) add += __expf(v.v[k] - local);
    merge(m, s, local, add);
  }
  for (int o = 16; o > 0; o >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wm[warp] = m;
    ws[warp] = s;
  }
  __syncthreads();
  m = wm[0];
  s = ws[0];
  for (int w = 1; w < BLOCK / 32; ++w) merge(m, s, wm[w], ws[w]);
  const float inv = 1.f / s;

  for (int g = threadIdx.x; g < groups; g += BLOCK) {
    T v = in[g];
#pragma unroll
    for (int k = 0; k < VEC; ++k) v.v[k] = __expf(v.v[k] - m) * inv;
    out[g] = v;
  }
}
