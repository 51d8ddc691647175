#pragma once
// The source of the CUDA timer's own kernels (backend/cuda/timer_helpers.hpp), built with NVRTC
// in the worker and compiled in a unit test, which needs no GPU
// (tests/unit/backend/ceiling_kernels_test.cpp).
#include <string>

namespace kopt::cuda {

// kopt_blocking_kernel spins until the host sets flag[0], or gives up after timeout_ns and
// marks flag[1]. kopt_l2_flush streams a buffer through the L2 with L2-only loads (.cg),
// evicting what was there and leaving clean lines; `sink` keeps the loads alive.
// kopt_keyed_hash adds every 32-bit word's contribution (measure/keyed_hash.hpp: the same
// constants) into *out; words [0, 4 * vectors) are read 16 bytes at a time where the buffer
// is aligned for it.
inline constexpr const char* k_timer_helper_source = R"(
extern "C" __global__ void kopt_blocking_kernel(volatile int* flag, unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) { flag[1] = 1; return; }
  }
}
extern "C" __global__ void kopt_l2_flush(const int4* buf, unsigned long long n, int* sink) {
  int acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7f4a7c15) *sink = acc;
}
__device__ __forceinline__ unsigned long long kopt_hash_word(unsigned w, unsigned long long i,
                                                             unsigned long long key) {
  unsigned long long x = (unsigned long long)w ^ (key + i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
extern "C" __global__ void kopt_keyed_hash(const unsigned* words, unsigned long long n,
                                           unsigned long long vectors, unsigned long long key,
                                           unsigned long long* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long acc = 0;
  const uint4* v = (const uint4*)words;
  for (unsigned long long j = tid; j < vectors; j += stride) {
    uint4 q = __ldcs(v + j);
    unsigned long long i = 4 * j;
    acc += kopt_hash_word(q.x, i, key) + kopt_hash_word(q.y, i + 1, key) +
           kopt_hash_word(q.z, i + 2, key) + kopt_hash_word(q.w, i + 3, key);
  }
  for (unsigned long long i = 4 * vectors + tid; i < n; i += stride)
    acc += kopt_hash_word(words[i], i, key);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicAdd(out, acc);
}
)";

// kopt_l2_sums adds, over the elements where both are finite, (got - ref)^2 into sums[0], ref^2
// into sums[1] and their count into sums[2]: the relative L2 distance of measure/compare.hpp
// (compare_tensors' rel_l2_err, relative_l2 against an fp64 reference), got and ref each of
// its own dtype (compare_dtype_code), ref masked under `key` (0: plain). It follows the
// comparison's source, whose element functions it uses; its sums depend on the order of the
// atomic adds, so it is informative, never a verdict's threshold on its own bits.
inline constexpr const char* k_timer_distance_source = R"(
extern "C" __global__ void kopt_l2_sums(const unsigned char* got, int gdtype,
                                        const unsigned char* ref, int rdtype,
                                        unsigned long long n, unsigned long long key,
                                        double* sums) {
  const int gw = kopt_width(gdtype), rw = kopt_width(rdtype);
  const unsigned long long bits = kopt_width_bits(rw);
  double d2 = 0.0, r2 = 0.0, count = 0.0;
  for (unsigned long long i = KOPT_FIRST_ITEM; i < n; i += KOPT_ITEMS) {
    double g = kopt_value(kopt_raw(got, i, gw), gdtype);
    unsigned long long raw = kopt_raw(ref, i, rw);
    if (key != 0) raw = (raw ^ kopt_mask(key, i)) & bits;
    double e = kopt_value(raw, rdtype);
    if (isfinite(g) && isfinite(e)) {
      double d = g - e;
      d2 += d * d;
      r2 += e * e;
      count += 1.0;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    d2 += __shfl_down_sync(0xffffffffu, d2, o);
    r2 += __shfl_down_sync(0xffffffffu, r2, o);
    count += __shfl_down_sync(0xffffffffu, count, o);
  }
  if ((threadIdx.x & 31) == 0 && count > 0.0) {
    atomicAdd(&sums[0], d2);
    atomicAdd(&sums[1], r2);
    atomicAdd(&sums[2], count);
  }
}
)";

// kopt_draw_tensor draws a seeded input where a job of kopt's own runs
// (backend/cuda/device_draw.hpp): element i of a recipe (kind, a, b, key) stored in dtype
// (DType's number) for i in [0, n), only where kopt_mix_takes(mix, i) when mix is not 0 (the
// second recipe of a mix, drawn over the first), with the element draw and stores of
// src/problem/draw_element.inc, which the host compiles too. Each f64 operation is an
// intrinsic that rounds once, so a multiply and an add are never fused. The prelude's macros
// stay defined: the draw is the last part of the helpers' source.
inline constexpr const char* k_draw_prelude_source = R"(
#define KOPT_DRAW_FN static __device__ __forceinline__
#define KOPT_DMUL(a, b) __dmul_rn((a), (b))
#define KOPT_DADD(a, b) __dadd_rn((a), (b))
#define KOPT_DSUB(a, b) __dsub_rn((a), (b))
#define KOPT_DDIV(a, b) __ddiv_rn((a), (b))
#define KOPT_DSQRT(a) __dsqrt_rn(a)
#define KOPT_F2U(f) __float_as_uint(f)
)";
inline constexpr const char* k_draw_kernel_source = R"(
extern "C" __global__ void kopt_draw_tensor(unsigned char* out, unsigned long long n, int dtype,
                                            int kind, double a, double b,
                                            unsigned long long key, unsigned long long mix) {
  const long long i64_min = -9223372036854775807LL - 1, i64_max = 9223372036854775807LL;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    if (mix != 0 && !kopt_mix_takes(mix, i)) continue;
    double v = kopt_draw_value(kind, a, b, key, i);
    switch (dtype) {
      case 0: ((double*)out)[i] = v; break;
      case 1: ((float*)out)[i] = __double2float_rn(v); break;
      case 2: ((unsigned short*)out)[i] = kopt_float_to_half(__double2float_rn(v)); break;
      case 3: ((unsigned short*)out)[i] = kopt_float_to_bfloat16(__double2float_rn(v)); break;
      case 4: ((long long*)out)[i] = kopt_saturate(v, -0x1p63, 0x1p63, i64_min, i64_max); break;
      case 5:
        ((int*)out)[i] = (int)kopt_saturate(v, -2147483648.0, 2147483647.0, -2147483648LL,
                                            2147483647LL);
        break;
      case 6: ((short*)out)[i] = (short)kopt_saturate(v, -32768.0, 32767.0, -32768, 32767); break;
      case 7: ((signed char*)out)[i] = (signed char)kopt_saturate(v, -128.0, 127.0, -128, 127); break;
      default: ((unsigned char*)out)[i] = (unsigned char)kopt_saturate(v, 0.0, 255.0, 0, 255); break;
    }
  }
}
)";

// Every entry point the timer looks up.
inline constexpr const char* k_timer_kernel_entries[] = {
    "kopt_blocking_kernel", "kopt_l2_flush", "kopt_keyed_hash", "kopt_compare_outputs",
    "kopt_mask_copy",       "kopt_l2_sums",  "kopt_draw_tensor"};

// The helpers above, the output comparison (backend/output_compare_kernel.hpp's CUDA dialect),
// the distance after it and the draw (its prelude, draw_element.inc, its kernel).
std::string timer_kernels_source();

}  // namespace kopt::cuda
