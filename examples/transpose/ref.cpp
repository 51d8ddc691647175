// CPU reference (kopt's C ABI: int entry(void** args)).
#include <cstdint>

extern "C" int transpose_ref(void** args) {
  const float* in = static_cast<const float*>(args[0]);
  float* out = static_cast<float*>(args[1]);
  const std::int64_t rows = *static_cast<const std::int32_t*>(args[2]);
  const std::int64_t cols = *static_cast<const std::int32_t*>(args[3]);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
  return 0;
}
