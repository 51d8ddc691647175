// Row softmax, in double, with the row maximum subtracted (kopt's C ABI: int entry(void**)).
#include <algorithm>
#include <cmath>
#include <cstdint>

extern "C" int ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  const std::int64_t rows = *static_cast<const std::int64_t*>(args[2]);
  const std::int64_t cols = *static_cast<const std::int64_t*>(args[3]);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    double m = in[0];
    for (std::int64_t c = 1; c < cols; ++c) m = std::max(m, static_cast<double>(in[c]));
    double sum = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - m);
    for (std::int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(std::exp(in[c] - m) / sum);
  }
  return 0;
}
