// Through a shared-memory tile so both the read and the write are coalesced.
// Tunable: TILE (tile edge), BLOCK_ROWS (threads in y; each handles TILE / BLOCK_ROWS rows),
// PAD (1 adds a column to the tile so column reads do not conflict on banks).
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS) transpose_tiled(const float* __restrict__ in,
                                                                                float* __restrict__ out,
                                                                                int rows, int cols) {
  __shared__ float tile[TILE][TILE + PAD];
  int c = blockIdx.x * TILE + threadIdx.x;
  int r = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (c < cols && r + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(r + j) * cols + c];
  __syncthreads();
  c = blockIdx.y * TILE + threadIdx.x;  // now along rows of the input
  r = blockIdx.x * TILE + threadIdx.y;  // now along cols of the input
#pragma unroll
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (c < rows && r + j < cols) out[(long long)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j];
}
