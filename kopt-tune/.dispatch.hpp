// The dispatch table of kernel  of problem  over 3 shapes, on 
// Written by kopt tune --axis: do not edit; tune again.
#pragma once
#include <cmath>

namespace kopt_dispatch {

struct __config {
};

// The configuration of the shape with these dims, else of the nearest measured one.
inline __config __select(long long M) {
  static const __config kopt_configs[] = {
  };
  struct KoptRow {
    long long M;
    int config;
  };
  static const KoptRow kopt_rows[] = {
  };
  int kopt_best = 0;
  double kopt_best_d = 1e300;
  for (int i = 0; i < (int)(sizeof(kopt_rows) / sizeof(kopt_rows[0])); ++i) {
    double d = 0;
    d += std::fabs(std::log((double)M / (double)kopt_rows[i].M));
    if (d < kopt_best_d) {
      kopt_best_d = d;
      kopt_best = i;
    }
  }
  return kopt_configs[kopt_rows[kopt_best].config];
}

}  // namespace kopt_dispatch
