// CPU reference (kopt's C ABI: int entry(void** args), docs/problem-spec.md): an
// independent algorithm in higher precision, every max and sum in double. It runs on the
// CPU so that every backend (CUDA and OpenCL alike) is checked against the same values.
#include <cmath>
#include <cstdint>

extern "C" int softmax_ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  const std::int64_t rows = *static_cast<const std::int64_t*>(args[2]);
  const std::int64_t cols = *static_cast<const std::int64_t*>(args[3]);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    double m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<double>(in[c]));
    double s = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(in[c]) - m);
    for (std::int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(std::exp(static_cast<double>(in[c]) - m) / s);
  }
  return 0;
}
