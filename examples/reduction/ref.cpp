// CPU reference: Kahan-free but in double, far more exact than any f32 kernel.
#include <cstdint>

extern "C" int sum_ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* total = static_cast<float*>(args[1]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[2]);
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  total[0] += static_cast<float>(s);
  return 0;
}
