// ReLU over n floats, VEC per thread (float or float4 accesses).
#ifndef VEC
#define VEC 4
#endif

template <int V> struct alignas(4 * V) Pack { float v[V]; };

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, int n) {
  using T = Pack<VEC>;
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g < n / VEC) {
    T v = reinterpret_cast<const T*>(x)[g];
#pragma unroll
    for (int k = 0; k < VEC; ++k) v.v[k] = fmaxf(v.v[k], 0.f);
    reinterpret_cast<T*>(y)[g] = v;
  }
}
