// The OpenCL port of kernel.cu: a TILE x TILE tile through local memory, BLOCK_ROWS rows of
// work-items, PAD 1 adds the padding column that removes local-memory bank conflicts.
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

__kernel __attribute__((reqd_work_group_size(TILE, BLOCK_ROWS, 1))) void transpose_tiled(
    __global const float* restrict in, __global float* restrict out, int rows, int cols) {
  __local float tile[TILE][TILE + PAD];
  const int tx = get_local_id(0), ty = get_local_id(1);
  int c = get_group_id(0) * TILE + tx;
  int r = get_group_id(1) * TILE + ty;
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (c < cols && r + j < rows) tile[ty + j][tx] = in[(long)(r + j) * cols + c];
  barrier(CLK_LOCAL_MEM_FENCE);
  c = get_group_id(1) * TILE + tx;  // now along rows of the input
  r = get_group_id(0) * TILE + ty;  // now along cols of the input
  for (int j = 0; j < TILE; j += BLOCK_ROWS)
    if (c < rows && r + j < cols) out[(long)(r + j) * rows + c] = tile[tx][ty + j];
}
