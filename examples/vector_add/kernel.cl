// The OpenCL port of kernel.cu, with the same params: BLOCK work-items per group, VEC
// elements per access (float, float2, float4), GRID_STRIDE 0 (one group of elements per
// work-item) or 1 (a fixed NDRange loops over the data).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef GRID_STRIDE
#define GRID_STRIDE 0
#endif

#if VEC == 1
typedef float T;
#elif VEC == 2
typedef float2 T;
#else
typedef float4 T;
#endif

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void vector_add(__global const float* restrict a,
                                                                            __global const float* restrict b,
                                                                            __global float* restrict c, int n) {
  const int groups = n / VEC;
  __global const T* av = (__global const T*)a;
  __global const T* bv = (__global const T*)b;
  __global T* cv = (__global T*)c;
  int g = get_global_id(0);
#if GRID_STRIDE
  for (; g < groups; g += get_global_size(0)) cv[g] = av[g] + bv[g];
#else
  if (g < groups) cv[g] = av[g] + bv[g];
#endif
}
