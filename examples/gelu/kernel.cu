// tanh-approximate GELU, VEC floats per thread.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

__device__ inline float gelu1(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.f + tanhf(k * (v + 0.044715f * v * v * v)));
}

extern "C" __global__ void __launch_bounds__(BLOCK) gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = (blockIdx.x * BLOCK + threadIdx.x) * VEC;
  if (i >= n) return;
#if VEC == 4
  float4 v = *reinterpret_cast<const float4*>(x + i);
  *reinterpret_cast<float4*>(y + i) = make_float4(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w));
#else
  y[i] = gelu1(x[i]);
#endif
}
