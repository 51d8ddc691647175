// bf16 as its 16 bits (no cuda_bf16.h needed under NVRTC): widening is a shift, narrowing
// rounds to nearest even (finite values; the inputs here are).
#pragma once
typedef unsigned short bf16_t;

__device__ __forceinline__ float bf16_to_f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }

__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (bf16_t)(u >> 16);
}
