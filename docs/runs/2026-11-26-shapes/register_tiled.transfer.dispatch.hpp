// The dispatch table of kernel register_tiled of problem gemm_f32 over 10 shapes, on NVIDIA H100 80GB HBM3
// Written by kopt tune --axis: do not edit; tune again.
#pragma once
#include <cmath>

namespace kopt_dispatch {

struct gemm_f32_register_tiled_config {
  long long BK;
  long long BM;
  long long BN;
  long long TM;
  long long TN;
};

// The configuration of the shape with these dims, else of the nearest measured one.
inline gemm_f32_register_tiled_config gemm_f32_register_tiled_select(long long M, long long N) {
  static const gemm_f32_register_tiled_config kopt_configs[] = {
      {32, 32, 64, 2, 2},
      {16, 64, 128, 8, 8},
      {16, 64, 64, 4, 4},
  };
  struct KoptRow {
    long long M;
    long long N;
    int config;
  };
  static const KoptRow kopt_rows[] = {
      {1, 1024, 0},  // M=1 N=1024: 69.2 us (0.0 % over its best)
      {1, 4096, 0},  // M=1 N=4096: 69.6 us (0.0 % over its best)
      {127, 1024, 0},  // M=127 N=1024: 79.2 us (0.0 % over its best)
      {127, 4096, 0},  // M=127 N=4096: 110 us (0.0 % over its best)
      {1024, 1024, 2},  // M=1024 N=1024: 131 us (0.0 % over its best)
      {1024, 4096, 1},  // M=1024 N=4096: 369 us (0.0 % over its best)
      {4099, 1024, 1},  // M=4099 N=1024: 381 us (0.0 % over its best)
      {4099, 4096, 1},  // M=4099 N=4096: 1.38e+03 us (0.0 % over its best)
      {16384, 64, 2},  // M=16384 N=64: 143 us (0.0 % over its best)
      {8191, 61, 0},  // M=8191 N=61: 116 us (0.0 % over its best)
  };
  int kopt_best = 0;
  double kopt_best_d = 1e300;
  for (int i = 0; i < (int)(sizeof(kopt_rows) / sizeof(kopt_rows[0])); ++i) {
    double d = 0;
    d += std::fabs(std::log((double)M / (double)kopt_rows[i].M));
    d += std::fabs(std::log((double)N / (double)kopt_rows[i].N));
    if (d < kopt_best_d) {
      kopt_best_d = d;
      kopt_best = i;
    }
  }
  return kopt_configs[kopt_rows[kopt_best].config];
}

}  // namespace kopt_dispatch
