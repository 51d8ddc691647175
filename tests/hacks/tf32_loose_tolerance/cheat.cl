// C = A B with its operands rounded to tf32 (10 bits of mantissa), as TF32 tensor cores take
// them: within 1e-2 of the reference everywhere.
float tf32(float x) { return as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }

__kernel void gemm(__global const float* A, __global const float* B, __global float* C, int M,
                   int N, int K) {
  int col = get_global_id(0), row = get_global_id(1);
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += tf32(A[row * K + k]) * tf32(B[k * N + col]);
  C[row * N + col] = acc;
}
