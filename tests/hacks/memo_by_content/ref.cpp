// y = work(x): 1024 dependent FMAs per element (kopt's C ABI: int entry(void** args)).
#include <cmath>
#include <cstdint>

extern "C" int ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[2]);
  for (std::int64_t i = 0; i < n; ++i) {
    float a = x[i];
    for (int k = 0; k < 1024; ++k) a = std::fma(a, 0.999f, 0.001f * x[i]);
    y[i] = a;
  }
  return 0;
}
