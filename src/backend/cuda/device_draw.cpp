#include "device_draw.hpp"

#include <algorithm>

#include "kopt/problem/dtype.hpp"
#include "kopt/problem/tensor_draw.hpp"

namespace kopt::cuda {

// kopt_draw_tensor's dtype numbers.
static_assert(static_cast<int>(DType::f64) == 0 && static_cast<int>(DType::f32) == 1 &&
              static_cast<int>(DType::f16) == 2 && static_cast<int>(DType::bf16) == 3 &&
              static_cast<int>(DType::i64) == 4 && static_cast<int>(DType::i32) == 5 &&
              static_cast<int>(DType::i16) == 6 && static_cast<int>(DType::i8) == 7 &&
              static_cast<int>(DType::u8) == 8);

CUresult draw_on_device(const DriverApi& api, const InputDraw& draw, CUdeviceptr ptr,
                        const JobTensor& t) {
  const DrawRecipe& r = *t.draw;
  unsigned long long n = t.bytes / dtype_size(t.dtype);
  int dtype = static_cast<int>(t.dtype), kind = static_cast<int>(r.kind);
  double a = r.a, b = r.b;
  unsigned long long key = r.key;
  void* params[] = {&ptr, &n, &dtype, &kind, &a, &b, &key};
  constexpr unsigned k_threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::clamp<unsigned long long>(
      (n + k_threads - 1) / k_threads, 1, static_cast<unsigned long long>(draw.sm_count) * 16));
  return api.launch_kernel(draw.kernel, blocks, 1, 1, k_threads, 1, 1, 0, CU_STREAM_LEGACY, params,
                           nullptr);
}

bool draws_on_device(const RunJob& job) {
  if (job.compare.empty()) return false;
  return std::any_of(job.tensors.begin(), job.tensors.end(),
                     [](const JobTensor& t) { return t.role != Role::output && t.draw; });
}

}  // namespace kopt::cuda
