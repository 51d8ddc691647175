// CPU reference (kopt's C ABI: int entry(void** args), docs/problem-spec.md).
#include <cstdint>

extern "C" int vector_add_ref(void** args) {
  const float* a = static_cast<const float*>(args[0]);
  const float* b = static_cast<const float*>(args[1]);
  float* c = static_cast<float*>(args[2]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[3]);
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
  return 0;
}
