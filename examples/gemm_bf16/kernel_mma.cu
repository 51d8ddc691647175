// C = A * B, bf16 in and out, f32 accumulation on tensor cores: mma.sync.m16n8k16 (HMMA).
// A block computes a BM x BN tile of C with WARPS_M x WARPS_N warps, each a (BM / WARPS_M) x
// (BN / WARPS_N) tile, stepping K by BK (32 or 64), at least MIN_BLOCKS blocks per SM
// (__launch_bounds__: fewer registers per thread). Switches (kopt.toml's methods and params):
//   CP_ASYNC  1: global -> shared with cp.async (LDGSTS) in a STAGES-deep pipeline;
//             0: through registers (LDG, STS), one tile at a time
//   LDMATRIX  1: MMA fragments read from shared memory with ldmatrix (LDSM, .trans for B);
//             0: with per-thread 32- and 16-bit shared loads
//   SWIZZLE   1: 16-byte chunks of a shared row XOR-permuted so that ldmatrix's 8 rows hit 8
//             different bank groups; 0: plain rows (4-way conflicts on A, 8-way on B)
// M, N and K must be multiples of BM, BN and BK (kopt.toml's dims are).
#include "bf16.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef CP_ASYNC
#define CP_ASYNC 1
#endif
#ifndef LDMATRIX
#define LDMATRIX 1
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif

#ifndef BK
#define BK 32
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define THREADS (WARPS_M * WARPS_N * 32)
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define MT (WM / 16)  // m16 tiles per warp
#define NT (WN / 8)   // n8 tiles per warp
#define A_STAGE (BM * BK)
#define B_STAGE (BK * BN)

// Element offset of 16-byte chunk c of row r (8 bf16 per chunk). A row of A holds BK / 8
// chunks: 4 (two rows per 128 bytes: XOR with (r / 2) % 4) or 8 (XOR with r % 8).
__device__ __forceinline__ int a_off(int r, int c) {
  return r * BK + 8 * (SWIZZLE ? (c ^ (BK / 8 >= 8 ? (r & 7) : ((r >> 1) & 3))) : c);
}
__device__ __forceinline__ int b_off(int r, int c) { return r * BN + 8 * (SWIZZLE ? (c ^ (r & 7)) : c); }

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void copy16(bf16_t* dst, const bf16_t* src) {
#if CP_ASYNC
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
#else
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#endif
}

// One BM x BK tile of A and one BK x BN tile of B into a stage.
__device__ __forceinline__ void load_tile(bf16_t* sA, bf16_t* sB, const bf16_t* A, const bf16_t* B, int m0, int n0,
                                          int k0, int N, int K) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = tid; i < BM * BK / 8; i += THREADS) {
    int r = i / (BK / 8), c = i % (BK / 8);
    copy16(sA + a_off(r, c), A + (size_t)(m0 + r) * K + k0 + 8 * c);
  }
#pragma unroll
  for (int i = tid; i < BK * BN / 8; i += THREADS) {
    int r = i / (BN / 8), c = i % (BN / 8);
    copy16(sB + b_off(r, c), B + (size_t)(k0 + r) * N + n0 + 8 * c);
  }
}

__device__ __forceinline__ void mma16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The A and B fragments of the warp's MT x NT tiles at column kk of a stage.
__device__ __forceinline__ void load_frags(const bf16_t* sA, const bf16_t* sB, unsigned (*a)[4], unsigned (*b)[2],
                                           int kk, int wm0, int wn0, int lane) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#if LDMATRIX
    int r = wm0 + mt * 16 + (lane % 16), c = kk / 8 + lane / 16;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[mt][0]), "=r"(a[mt][1]), "=r"(a[mt][2]), "=r"(a[mt][3])
                 : "r"(smem_addr(sA + a_off(r, c))));
#else
    int r = wm0 + mt * 16 + lane / 4, k = kk + 2 * (lane % 4);
    a[mt][0] = *reinterpret_cast<const unsigned*>(sA + a_off(r, k / 8) + k % 8);
    a[mt][1] = *reinterpret_cast<const unsigned*>(sA + a_off(r + 8, k / 8) + k % 8);
    a[mt][2] = *reinterpret_cast<const unsigned*>(sA + a_off(r, k / 8 + 1) + k % 8);
    a[mt][3] = *reinterpret_cast<const unsigned*>(sA + a_off(r + 8, k / 8 + 1) + k % 8);
#endif
  }
#if LDMATRIX
#pragma unroll
  for (int p = 0; p < NT / 2; ++p) {
    int r = kk + (lane % 8) + 8 * ((lane / 8) % 2), c = (wn0 + p * 16) / 8 + lane / 16;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b[2 * p][0]), "=r"(b[2 * p][1]), "=r"(b[2 * p + 1][0]), "=r"(b[2 * p + 1][1])
                 : "r"(smem_addr(sB + b_off(r, c))));
  }
#else
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    int n = wn0 + nt * 8 + lane / 4, k = kk + 2 * (lane % 4);
    auto at = [&](int kr) { return (unsigned)sB[b_off(kr, n / 8) + n % 8]; };
    b[nt][0] = at(k) | (at(k + 1) << 16);
    b[nt][1] = at(k + 8) | (at(k + 9) << 16);
  }
#endif
}

// The warp's MT x NT tiles over the BK columns of k of one stage. The fragments of step
// kk + 16 are read while step kk's MMAs run (two register sets), so the shared-memory
// latency hides behind tensor-core work.
__device__ __forceinline__ void compute_stage(const bf16_t* sA, const bf16_t* sB, float (*acc)[NT][4], int wm0,
                                              int wn0, int lane) {
  unsigned a[2][MT][4], b[2][NT][2];
  load_frags(sA, sB, a[0], b[0], 0, wm0, wn0, lane);
#pragma unroll
  for (int step = 0; step < BK / 16; ++step) {
    const int cur = step % 2;
    if (step + 1 < BK / 16) load_frags(sA, sB, a[cur ^ 1], b[cur ^ 1], (step + 1) * 16, wm0, wn0, lane);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma16816(acc[mt][nt], a[cur][mt], b[cur][nt][0], b[cur][nt][1]);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    gemm_bf16_mma(const bf16_t* __restrict__ A, const bf16_t* __restrict__ B, bf16_t* __restrict__ C, int M, int N,
                  int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16_t* sA = reinterpret_cast<bf16_t*>(smem);
  bf16_t* sB = sA + STAGES * A_STAGE;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int KT = K / BK;
  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

#if CP_ASYNC
  // STAGES - 1 tiles in flight ahead of the one computed.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(sA + s * A_STAGE, sB + s * B_STAGE, A, B, m0, n0, s * BK, N, K);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int kt = 0; kt < KT; ++kt) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads();  // tile kt is in, and every warp is done with the stage refilled next
    int next = kt + STAGES - 1;
    if (next < KT) {
      int s = next % STAGES;
      load_tile(sA + s * A_STAGE, sB + s * B_STAGE, A, B, m0, n0, next * BK, N, K);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    int s = kt % STAGES;
    compute_stage(sA + s * A_STAGE, sB + s * B_STAGE, acc, wm0, wn0, lane);
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
#else
  for (int kt = 0; kt < KT; ++kt) {
    load_tile(sA, sB, A, B, m0, n0, kt * BK, N, K);
    __syncthreads();
    compute_stage(sA, sB, acc, wm0, wn0, lane);
    __syncthreads();
  }
#endif

  // Each thread holds rows lane/4 and lane/4 + 8, columns 2 * (lane % 4) and the next.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      int row = m0 + wm0 + mt * 16 + lane / 4, col = n0 + wn0 + nt * 8 + 2 * (lane % 4);
      const float* c = acc[mt][nt];
      *reinterpret_cast<unsigned*>(C + (size_t)row * N + col) = f32_to_bf16(c[0]) | ((unsigned)f32_to_bf16(c[1]) << 16);
      *reinterpret_cast<unsigned*>(C + (size_t)(row + 8) * N + col) =
          f32_to_bf16(c[2]) | ((unsigned)f32_to_bf16(c[3]) << 16);
    }
}
