// C = A * B, bf16 in and out, f32 accumulation, on Hopper's warpgroup tensor cores (sm_90a):
// wgmma.mma_async (HGMMA) fed by TMA bulk tensor copies (UTMALDG) through a STAGES-deep ring of
// shared-memory stages, each guarded by two mbarriers (full: the copy engine has landed it;
// empty: every consumer is done reading it). Warp specialization: warpgroup 0 is the producer
// (one thread issues the copies, its registers given away with setmaxnreg), warpgroups
// 1..CONSUMERS each compute 64 rows x BN columns of the block's (64 * CONSUMERS) x BN tile.
// A stage holds A as 64 * CONSUMERS rows of 64 k (128 bytes each, K-major) and B as BN / 64
// boxes of 64 k-rows x 64 n (N-major), both in TMA's 128-byte swizzle, which is the layout
// the wgmma descriptors name. M, N and K must be multiples of the tile (kopt.toml's
// constraints), the rows of A and B 16-byte aligned (TMA).
// PERSISTENT=1: one block per SM walks the tiles (grouped GROUP_M tile-rows at a time, for L2
// reuse), and the ring runs on across them: the producer loads the next tile's first stages
// while the consumers store the last one, which a block per tile leaves idle.
// EPILOGUE=1: each warp stages its 16 rows of C through shared memory, 64 columns at a time
// (rows padded to 144 bytes, so neither side conflicts), and stores whole 128-byte row pieces
// with 16-byte stores, instead of two 4-byte stores a thread per 8 columns (half sectors).
#include "bf16.cuh"
#include "wgmma.cuh"

#ifndef BN
#define BN 256
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#define GROUP_M 8
#ifndef EPILOGUE
#define EPILOGUE 0
#endif
#define BM (64 * CONSUMERS)
#define BK 64
#define THREADS (128 * (CONSUMERS + 1))
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)

// A CUtensorMap as the kernel sees it (NVRTC has no cuda.h): 128 opaque bytes.
struct alignas(64) TensorMap {
  unsigned long long v[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes));
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)));
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity));
}

// One box of a tensor map into shared memory; c0 is the innermost coordinate.
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, int c0, int c1, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// A shared-memory matrix descriptor in the 128-byte swizzle: start address, leading and stride
// byte offsets (LBO: between 64-element chunks of N for N-major B; unused for K-major A; SBO:
// between groups of 8 rows of 128 bytes).
__device__ __forceinline__ unsigned long long desc_sw128(const void* p, unsigned lbo, unsigned sbo) {
  unsigned long long a = smem_u32(p);
  return ((a & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// Pins the accumulators in their registers across the asynchronous region (no copies, no
// reads the compiler might move between a wgmma and its wait).
__device__ __forceinline__ void fence_acc(float* d) {
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_tile(float* d, unsigned long long da, unsigned long long db) {
#if BN == 256
  wgmma_m64n256k16(d, da, db);
#elif BN == 128
  wgmma_m64n128k16(d, da, db);
#else
  wgmma_m64n64k16(d, da, db);
#endif
}

// The tile of the block's turn-th turn (its top-left corner); false past the last.
__device__ __forceinline__ bool tile_of(int turn, int M, int N, int& m0, int& n0) {
#if PERSISTENT
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int t = blockIdx.x + turn * gridDim.x;
  if (t >= tiles_m * tiles_n) return false;
  const int per_group = GROUP_M * tiles_n, first_m = (t / per_group) * GROUP_M;
  const int rows = min(tiles_m - first_m, GROUP_M), r = t % per_group;
  m0 = (first_m + r % rows) * BM;
  n0 = (r / rows) * BN;
  return true;
#else
  m0 = blockIdx.y * BM;
  n0 = blockIdx.x * BN;
  return turn == 0;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_wgmma(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                    bf16_t* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The swizzle pattern repeats every 1024 bytes: stages start on a 1024-byte boundary.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<size_t>(smem_raw) + 1023) & ~size_t(1023));
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE_BYTES);
  unsigned long long* empty = full + STAGES;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int KT = K / BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CONSUMERS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      int it = 0;  // the ring's position, on across tiles
      int m0, n0;
      for (int turn = 0; tile_of(turn, M, N, m0, n0); ++turn)
        for (int kt = 0; kt < KT; ++kt, ++it) {
          const int s = it % STAGES, round = it / STAGES;
          mbar_wait(&empty[s], (round & 1) ^ 1);  // the first round passes at once
          unsigned char* sa = smem + s * STAGE_BYTES;
          mbar_expect_tx(&full[s], STAGE_BYTES);
          tma_load_2d(sa, &tmA, kt * BK, m0, &full[s]);
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) tma_load_2d(sa + A_BYTES + j * BK * 128, &tmB, n0 + 64 * j, kt * BK, &full[s]);
        }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMERS == 1 ? 240 : 232));
    const int c = wg - 1;
    int it = 0;
    int m0, n0;
    for (int turn = 0; tile_of(turn, M, N, m0, n0); ++turn) {
      float d[BN / 2];
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* sa = smem + s * STAGE_BYTES + c * 64 * 128;
        const unsigned char* sb = smem + s * STAGE_BYTES + A_BYTES;
        fence_acc(d);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
          wgmma_tile(d, desc_sw128(sa + kk * 32, 16, 1024), desc_sw128(sb + kk * 16 * 128, BK * 128, 1024));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        // One group stays in flight: the previous stage is read out once it completes.
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        fence_acc(d);
        if (kt > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
      }
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      fence_acc(d);
      if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);  // the tile's last stage, read out

      // Each thread holds rows r and r + 8 of its warp's 16, two adjacent columns per n8 chunk.
      const int warp = tid / 32, lane = tid % 32;
#if EPILOGUE
      unsigned char* ws = smem + STAGES * STAGE_BYTES + 16 * STAGES + (c * 4 + warp) * (16 * 144);
      const size_t row0 = (size_t)(m0 + c * 64 + warp * 16);
#pragma unroll
      for (int h = 0; h < BN / 64; ++h) {
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) {
          const int j = h * 8 + jj, colb = (8 * jj + 2 * (lane % 4)) * 2;
          *reinterpret_cast<unsigned*>(ws + (lane / 4) * 144 + colb) =
              f32_to_bf16(d[4 * j]) | ((unsigned)f32_to_bf16(d[4 * j + 1]) << 16);
          *reinterpret_cast<unsigned*>(ws + (lane / 4 + 8) * 144 + colb) =
              f32_to_bf16(d[4 * j + 2]) | ((unsigned)f32_to_bf16(d[4 * j + 3]) << 16);
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int rr = i * 4 + lane / 8, cb = (lane % 8) * 16;
          const uint4 v = *reinterpret_cast<const uint4*>(ws + rr * 144 + cb);
          *reinterpret_cast<uint4*>(C + (row0 + rr) * N + n0 + h * 64 + cb / 2) = v;
        }
        __syncwarp();  // read out before the next piece is written
      }
#else
      const int row = m0 + c * 64 + warp * 16 + lane / 4, col0 = n0 + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + 8 * j;
        *reinterpret_cast<unsigned*>(C + (size_t)row * N + col) =
            f32_to_bf16(d[4 * j]) | ((unsigned)f32_to_bf16(d[4 * j + 1]) << 16);
        *reinterpret_cast<unsigned*>(C + (size_t)(row + 8) * N + col) =
            f32_to_bf16(d[4 * j + 2]) | ((unsigned)f32_to_bf16(d[4 * j + 3]) << 16);
      }
#endif
    }
  }
}
