// y = x / n (kopt's C ABI: int entry(void** args)).
#include <cstdint>

extern "C" int ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[2]);
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] / static_cast<float>(n);
  return 0;
}
