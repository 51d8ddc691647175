#pragma once
// The operands of the FP8 tensor-core ceiling (src/backend/cuda/fp8_ceiling.cpp): e4m3 values
// encoded on the host, as cuBLASLt reads them (CUDA_R_8F_E4M3, the "fn" variant of the OCP FP8
// formats): 1 sign bit, 4 exponent bits of bias 7, 3 mantissa bits; no infinities, 0x7F and
// 0xFF are NaN, the largest finite magnitude 448 (0x7E).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kopt::cuda {

// The e4m3 bits nearest `x` (ties to even); magnitudes past 448 saturate to 448, NaN is 0x7F.
std::uint8_t e4m3_from_float(float x);

// `count` e4m3 values roughly uniform in [-1, 1] (real bit patterns: the power a GEMM draws,
// and so its clocks, depend on the data), the same for the same seed.
std::vector<std::uint8_t> random_e4m3(std::size_t count, std::uint64_t seed);

}  // namespace kopt::cuda
