// ReLU over n floats, VEC per work-item (float, float4). The port that CI runs on PoCL.
#ifndef VEC
#define VEC 4
#endif
#if VEC == 1
typedef float T;
#else
typedef float4 T;
#endif

__kernel void relu(__global const float* restrict x, __global float* restrict y, int n) {
  int g = get_global_id(0);
  if (g < n / VEC) ((__global T*)y)[g] = fmax(((__global const T*)x)[g], (T)0.0f);
}
