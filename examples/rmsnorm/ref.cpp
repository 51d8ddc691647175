// CPU reference in double precision (kopt's C ABI: int entry(void** args)).
#include <cmath>
#include <cstdint>

extern "C" int rmsnorm_ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  const float* w = static_cast<const float*>(args[1]);
  float* y = static_cast<float*>(args[2]);
  const int rows = *static_cast<const std::int32_t*>(args[3]);
  const int cols = *static_cast<const std::int32_t*>(args[4]);
  const float eps = *static_cast<const float*>(args[5]);
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<std::int64_t>(r) * cols;
    double ss = 0.0;
    for (int c = 0; c < cols; ++c) ss += static_cast<double>(in[c]) * in[c];
    const double scale = 1.0 / std::sqrt(ss / cols + eps);
    for (int c = 0; c < cols; ++c)
      y[static_cast<std::int64_t>(r) * cols + c] = static_cast<float>(in[c] * scale * w[c]);
  }
  return 0;
}
