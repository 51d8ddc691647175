#pragma once
// Sources of kopt's own ceiling kernels, built with NVRTC in the worker (ceilings.cpp) and
// compiled in a unit test, which needs no GPU (tests/unit/backend/ceiling_kernels_test.cpp).

namespace kopt::cuda {

// Streaming kernels for the memory ceiling (`n` counts 16-byte elements):
// - a copy of 16-byte loads and stores (uint4), four of each in flight per thread, over a
//   grid that strides the buffers: plain, and cache-streaming (__ldcs / __stcs);
// - a copy and an add with one element per thread;
// - the L2 flush kopt bench runs before a cold sample (reads with L2-only loads).
inline constexpr const char* k_stream_copy_source = R"(
template <bool Streaming>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if (Streaming) return __ldcs(p);
  return *p;
}
template <bool Streaming>
__device__ __forceinline__ void store16(uint4* p, uint4 v) {
  if (Streaming) __stcs(p, v);
  else *p = v;
}
template <bool Streaming>
__device__ __forceinline__ void stream_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                            unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v0 = load16<Streaming>(src + i);
    uint4 v1 = load16<Streaming>(src + i + stride);
    uint4 v2 = load16<Streaming>(src + i + 2 * stride);
    uint4 v3 = load16<Streaming>(src + i + 3 * stride);
    store16<Streaming>(dst + i, v0);
    store16<Streaming>(dst + i + stride, v1);
    store16<Streaming>(dst + i + 2 * stride, v2);
    store16<Streaming>(dst + i + 3 * stride, v3);
  }
  for (; i < n; i += stride) store16<Streaming>(dst + i, load16<Streaming>(src + i));
}
extern "C" __global__ void kopt_stream_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                            unsigned long long n) {
  stream_copy<false>(src, dst, n);
}
extern "C" __global__ void kopt_stream_copy_cs(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                               unsigned long long n) {
  stream_copy<true>(src, dst, n);
}
// One uint4 per thread, a grid that covers the buffer: on an H100 this beats the grid-stride
// loop (3.02 against 2.86 TB/s over 512 MiB) and cuMemcpy (2.96).
extern "C" __global__ void kopt_copy_flat(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                          unsigned long long n) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
// c = a + b over float4, one per thread: two reads to a write, as elementwise kernels do.
extern "C" __global__ void kopt_add_flat(const float4* __restrict__ a, const float4* __restrict__ b,
                                         float4* __restrict__ c, unsigned long long n) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}
// kopt bench's read flush: a buffer streamed through the L2 with L2-only loads.
extern "C" __global__ void kopt_ceiling_l2_flush(const uint4* __restrict__ p, unsigned long long n,
                                                 unsigned* sink) {
  unsigned acc = 0;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    acc ^= __ldcg(p + i).x;
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads, never true in practice
}
)";
inline constexpr const char* k_stream_copy_entry = "kopt_stream_copy";
inline constexpr const char* k_stream_copy_cs_entry = "kopt_stream_copy_cs";
inline constexpr const char* k_copy_flat_entry = "kopt_copy_flat";
inline constexpr const char* k_add_flat_entry = "kopt_add_flat";
inline constexpr const char* k_ceiling_flush_entry = "kopt_ceiling_l2_flush";

}  // namespace kopt::cuda
