#include "kopt/backend/output_compare_kernel.hpp"

#include <bit>
#include <limits>

#include "kopt/core/entropy.hpp"
#include "kopt/measure/keyed_hash.hpp"

namespace kopt {
namespace {

// What each dialect calls things. KOPT_CONST_GLOBAL: a pointer to the tensors' memory;
// KOPT_ATOMIC_*: on the words (a 64-bit unsigned integer each); KOPT_BOUND: atol + rtol * |e|,
// rounded twice, never contracted into one fused multiply-add.
constexpr const char* k_cuda_prelude = R"(
#define KOPT_KERNEL extern "C" __global__
#define KOPT_FN static __device__ __forceinline__
#define KOPT_GLOBAL
typedef unsigned long long kopt_u64;
typedef long long kopt_i64;
typedef unsigned int kopt_u32;
#define KOPT_FIRST_ITEM (blockIdx.x * (kopt_u64)blockDim.x + threadIdx.x)
#define KOPT_ITEMS ((kopt_u64)gridDim.x * blockDim.x)
#define KOPT_AS_DOUBLE(b) __longlong_as_double((long long)(b))
#define KOPT_AS_U64(d) ((kopt_u64)__double_as_longlong(d))
#define KOPT_AS_FLOAT(b) __uint_as_float(b)
#define KOPT_ISNAN(x) isnan(x)
#define KOPT_ISINF(x) isinf(x)
#define KOPT_BOUND(atol, rtol, ae) __dadd_rn((atol), __dmul_rn((rtol), (ae)))
#define KOPT_ATOMIC_ADD(p, v) atomicAdd((p), (v))
#define KOPT_ATOMIC_MAX(p, v) atomicMax((p), (v))
#define KOPT_ATOMIC_MIN(p, v) atomicMin((p), (v))
)";

constexpr const char* k_opencl_prelude = R"(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#pragma OPENCL FP_CONTRACT OFF
#define KOPT_KERNEL __kernel
#define KOPT_FN static inline
#define KOPT_GLOBAL __global
typedef ulong kopt_u64;
typedef long kopt_i64;
typedef uint kopt_u32;
#define KOPT_FIRST_ITEM ((kopt_u64)get_global_id(0))
#define KOPT_ITEMS ((kopt_u64)get_global_size(0))
#define KOPT_AS_DOUBLE(b) as_double((kopt_u64)(b))
#define KOPT_AS_U64(d) as_ulong(d)
#define KOPT_AS_FLOAT(b) as_float((kopt_u32)(b))
#define KOPT_ISNAN(x) isnan(x)
#define KOPT_ISINF(x) isinf(x)
#define KOPT_BOUND(atol, rtol, ae) ((atol) + (rtol) * (ae))
#define KOPT_ATOMIC_ADD(p, v) atom_add((volatile __global kopt_u64*)(p), (v))
#define KOPT_ATOMIC_MAX(p, v) atom_max((volatile __global kopt_u64*)(p), (v))
#define KOPT_ATOMIC_MIN(p, v) atom_min((volatile __global kopt_u64*)(p), (v))
)";

// Built with -ffp-contract=off by the test that holds it to compare_tensors.
constexpr const char* k_host_prelude = R"(
#include <cmath>
#include <cstdint>
#include <cstring>
#define KOPT_KERNEL extern "C"
#define KOPT_FN static inline
#define KOPT_GLOBAL
typedef std::uint64_t kopt_u64;
typedef std::int64_t kopt_i64;
typedef std::uint32_t kopt_u32;
#define KOPT_FIRST_ITEM ((kopt_u64)0)
#define KOPT_ITEMS ((kopt_u64)1)
static inline double kopt_as_double(kopt_u64 b) { double d; std::memcpy(&d, &b, 8); return d; }
static inline kopt_u64 kopt_as_u64(double d) { kopt_u64 b; std::memcpy(&b, &d, 8); return b; }
static inline float kopt_as_float(kopt_u32 b) { float f; std::memcpy(&f, &b, 4); return f; }
#define KOPT_AS_DOUBLE(b) kopt_as_double((kopt_u64)(b))
#define KOPT_AS_U64(d) kopt_as_u64(d)
#define KOPT_AS_FLOAT(b) kopt_as_float((kopt_u32)(b))
using std::fabs;
#define KOPT_ISNAN(x) std::isnan(x)
#define KOPT_ISINF(x) std::isinf(x)
#define KOPT_BOUND(atol, rtol, ae) ((atol) + (rtol) * (ae))
#define KOPT_ATOMIC_ADD(p, v) (*(p) += (v))
#define KOPT_ATOMIC_MAX(p, v) (*(p) = *(p) > (v) ? *(p) : (v))
#define KOPT_ATOMIC_MIN(p, v) (*(p) = *(p) < (v) ? *(p) : (v))
)";

// The rule, in the common subset of the three. An element's raw bits by its width, then its
// value as a double by its dtype (compare_dtype_code); a half is widened as problem/dtype.cpp's
// half_to_float does (a subnormal's mantissa times 2^-24: exact in a float). A masked copy
// holds each element's bits XOR kopt_mask(key, i), cut to its width.
constexpr const char* k_rule = R"(
KOPT_FN kopt_u64 kopt_mask(kopt_u64 key, kopt_u64 i) {
  kopt_u64 x = key + i * (kopt_u64)0x9E3779B97F4A7C15UL;
  x ^= x >> 30;
  x *= (kopt_u64)0xBF58476D1CE4E5B9UL;
  x ^= x >> 27;
  x *= (kopt_u64)0x94D049BB133111EBUL;
  return x ^ (x >> 31);
}

KOPT_FN kopt_u64 kopt_raw(const KOPT_GLOBAL unsigned char* p, kopt_u64 i, int width) {
  if (width == 8) return ((const KOPT_GLOBAL kopt_u64*)p)[i];
  if (width == 4) return ((const KOPT_GLOBAL kopt_u32*)p)[i];
  if (width == 2) return ((const KOPT_GLOBAL unsigned short*)p)[i];
  return p[i];
}

KOPT_FN kopt_u64 kopt_width_bits(int width) {
  return width == 8 ? ~(kopt_u64)0 : (((kopt_u64)1) << (8 * width)) - 1;
}

KOPT_FN double kopt_half_value(kopt_u32 h) {
  kopt_u32 sign = (h & 0x8000u) << 16;
  kopt_u32 e = (h >> 10) & 0x1fu;
  kopt_u32 m = h & 0x3ffu;
  if (e == 0x1fu) return (double)KOPT_AS_FLOAT(sign | 0x7f800000u | (m << 13));
  if (e == 0u) {
    float v = (float)m * 5.9604644775390625e-8f;
    return (double)(sign ? -v : v);
  }
  return (double)KOPT_AS_FLOAT(sign | ((e + 112u) << 23) | (m << 13));
}

KOPT_FN double kopt_value(kopt_u64 b, int dtype) {
  switch (dtype) {
    case 0:
      return KOPT_AS_DOUBLE(b);
    case 1:
      return (double)KOPT_AS_FLOAT((kopt_u32)b);
    case 2:
      return kopt_half_value((kopt_u32)b);
    case 3:
      return (double)KOPT_AS_FLOAT(((kopt_u32)b) << 16);
    case 4:
      return (double)(kopt_i64)b;
    case 5:
      return (double)(int)(kopt_u32)b;
    case 6:
      return (double)(short)(unsigned short)b;
    case 7:
      return (double)(signed char)(unsigned char)b;
    default:
      return (double)(unsigned char)b;
  }
}

KOPT_FN int kopt_width(int dtype) {
  return dtype == 0 || dtype == 4 ? 8 : dtype == 1 || dtype == 5 ? 4 : dtype <= 3 || dtype == 6 ? 2 : 1;
}

// `expected` is a masked copy under `key` (0: plain bytes).
KOPT_KERNEL void kopt_compare_outputs(const KOPT_GLOBAL unsigned char* got,
                                      const KOPT_GLOBAL unsigned char* expected, kopt_u64 n,
                                      int dtype, kopt_u64 poison, double atol, double rtol,
                                      kopt_u64 key, KOPT_GLOBAL kopt_u64* words) {
  const int width = kopt_width(dtype);
  const kopt_u64 bits = kopt_width_bits(width);
  kopt_u64 mismatches = 0, nans = 0, infs = 0, unwritten = 0, first = ~(kopt_u64)0;
  double max_abs = 0.0, max_rel = 0.0;
  for (kopt_u64 i = KOPT_FIRST_ITEM; i < n; i += KOPT_ITEMS) {
    kopt_u64 graw = kopt_raw(got, i, width);
    kopt_u64 eraw = kopt_raw(expected, i, width);
    if (key != 0) eraw = (eraw ^ kopt_mask(key, i)) & bits;
    double g = kopt_value(graw, dtype);
    double e = kopt_value(eraw, dtype);
    if (graw == poison) ++unwritten;
    int gnan = KOPT_ISNAN(g), ginf = KOPT_ISINF(g), enan = KOPT_ISNAN(e), einf = KOPT_ISINF(e);
    if (gnan) ++nans;
    if (ginf) ++infs;
    int ok;
    if (enan || einf || gnan || ginf) {
      ok = (enan && gnan) || (einf && g == e);
      if (!ok) max_abs = KOPT_AS_DOUBLE(((kopt_u64)0x7ff00000u) << 32);  // +infinity
    } else {
      double diff = fabs(g - e);
      ok = diff <= KOPT_BOUND(atol, rtol, fabs(e));
      max_abs = max_abs > diff ? max_abs : diff;
      if (e != 0.0) {
        double rel = diff / fabs(e);
        max_rel = max_rel > rel ? max_rel : rel;
      }
    }
    if (!ok) {
      if (mismatches == 0) first = i;  // a work-item walks its elements in order
      ++mismatches;
    }
  }
  if (mismatches) {
    KOPT_ATOMIC_ADD(&words[0], mismatches);
    KOPT_ATOMIC_MIN(&words[6], first);
  }
  if (nans) KOPT_ATOMIC_ADD(&words[1], nans);
  if (infs) KOPT_ATOMIC_ADD(&words[2], infs);
  if (unwritten) KOPT_ATOMIC_ADD(&words[3], unwritten);
  if (max_abs > 0.0) KOPT_ATOMIC_MAX(&words[4], KOPT_AS_U64(max_abs));
  if (max_rel > 0.0) KOPT_ATOMIC_MAX(&words[5], KOPT_AS_U64(max_rel));
}

// dst = src masked under `key`, n elements of `width` bytes (in place where dst is src).
KOPT_KERNEL void kopt_mask_copy(const KOPT_GLOBAL unsigned char* src, KOPT_GLOBAL unsigned char* dst,
                                kopt_u64 n, int width, kopt_u64 key) {
  const kopt_u64 bits = kopt_width_bits(width);
  for (kopt_u64 i = KOPT_FIRST_ITEM; i < n; i += KOPT_ITEMS) {
    kopt_u64 v = (kopt_raw(src, i, width) ^ kopt_mask(key, i)) & bits;
    if (width == 8)
      ((KOPT_GLOBAL kopt_u64*)dst)[i] = v;
    else if (width == 4)
      ((KOPT_GLOBAL kopt_u32*)dst)[i] = (kopt_u32)v;
    else if (width == 2)
      ((KOPT_GLOBAL unsigned short*)dst)[i] = (unsigned short)v;
    else
      dst[i] = (unsigned char)v;
  }
}
)";

}  // namespace

std::string output_compare_source(KernelDialect d) {
  const char* prelude = d == KernelDialect::cuda     ? k_cuda_prelude
                        : d == KernelDialect::opencl ? k_opencl_prelude
                                                     : k_host_prelude;
  return std::string(prelude) + k_rule;
}

std::uint64_t mask_key() {
  return unpredictable_u64() | 1;
}

void unmask_element(std::span<std::byte> element, std::uint64_t key, std::uint64_t i) {
  if (key == 0) return;
  const std::uint64_t m = hash_mix(key + i * k_hash_index_step);  // kopt_mask's stream
  for (std::size_t b = 0; b < element.size() && b < 8; ++b)
    element[b] ^= static_cast<std::byte>((m >> (8 * b)) & 0xffu);
}

CompareWords compare_words_start() {
  CompareWords w{};
  w[k_word_first] = std::numeric_limits<std::uint64_t>::max();
  return w;
}

int compare_dtype_code(DType t) {
  switch (t) {
    case DType::f64:
      return 0;
    case DType::f32:
      return 1;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 3;
    case DType::i64:
      return 4;
    case DType::i32:
      return 5;
    case DType::i16:
      return 6;
    case DType::i8:
      return 7;
    case DType::u8:
      return 8;
  }
  return 8;
}

std::uint64_t compare_poison_bits(DType t) {
  const Poison p = poison_for(t);
  const std::size_t size = dtype_size(t);
  std::uint64_t bits = 0;
  for (std::size_t b = 0; b < size; ++b)  // little-endian, as is_poison reads the bytes
    bits |= static_cast<std::uint64_t>(
                (p.pattern >> (8 * (b % static_cast<std::size_t>(p.width)))) & 0xffu)
            << (8 * b);
  return bits;
}

CompareResult compare_result_from_words(const CompareWords& w, const std::string& tensor,
                                        std::size_t numel, const std::vector<std::int64_t>& shape,
                                        Tolerance tol, std::optional<FirstMismatch> first) {
  CompareResult r;
  r.tensor = tensor;
  r.numel = numel;
  r.tolerance = tol;
  r.mismatches = static_cast<std::size_t>(w[k_word_mismatches]);
  r.nan_count = static_cast<std::size_t>(w[k_word_nan]);
  r.inf_count = static_cast<std::size_t>(w[k_word_inf]);
  r.unwritten = static_cast<std::size_t>(w[k_word_unwritten]);
  r.max_abs_err = std::bit_cast<double>(w[k_word_max_abs]);
  r.max_rel_err = std::bit_cast<double>(w[k_word_max_rel]);
  r.rel_l2_err = -1;
  if (r.mismatches > 0 && w[k_word_first] < numel) {
    const std::size_t flat = static_cast<std::size_t>(w[k_word_first]);
    Mismatch m{flat, unflatten(flat, shape), 0, 0};
    if (first) {
      m.got = first->got;
      m.expected = first->expected;
    }
    r.first_mismatches.push_back(std::move(m));
  }
  r.passed = r.mismatches == 0;
  return r;
}

}  // namespace kopt
