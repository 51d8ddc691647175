// out[b, 0, j] = sum over i of x[b, i, j] for x[batch, dim1, dim2]: the reduced axis is the
// middle one, so neighbouring threads take neighbouring columns j (coalesced loads) and
// SPLIT rows of threads share the i range; shared memory adds up their partial sums.
// Tunable: BX columns per block, SPLIT threads per column.
#ifndef BX
#define BX 128
#endif
#ifndef SPLIT
#define SPLIT 8
#endif

extern "C" __global__ void __launch_bounds__(BX * SPLIT) sum_middle(const float* __restrict__ x,
                                                                    float* __restrict__ out, int dim1, int dim2) {
  __shared__ float part[SPLIT][BX];
  const int j = blockIdx.x * BX + threadIdx.x;
  const int b = blockIdx.y;
  float acc = 0.f;
  if (j < dim2) {
    const float* col = x + (long long)b * dim1 * dim2 + j;
#pragma unroll 4
    for (int i = threadIdx.y; i < dim1; i += SPLIT) acc += col[(long long)i * dim2];
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < dim2) {
#pragma unroll
    for (int r = 1; r < SPLIT; ++r) acc += part[r][threadIdx.x];
    out[(long long)b * dim2 + j] = acc;
  }
}
