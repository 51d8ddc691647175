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
                        const DrawRecipe& recipe, std::size_t bytes, CUstream stream,
                        std::uint64_t mix) {
  unsigned long long n = bytes / dtype_size(recipe.dtype);
  int dtype = static_cast<int>(recipe.dtype), kind = static_cast<int>(recipe.kind);
  double a = recipe.a, b = recipe.b;
  unsigned long long key = recipe.key, mix_key = mix;
  void* params[] = {&ptr, &n, &dtype, &kind, &a, &b, &key, &mix_key};
  constexpr unsigned k_threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::clamp<unsigned long long>(
      (n + k_threads - 1) / k_threads, 1, static_cast<unsigned long long>(draw.sm_count) * 16));
  return api.launch_kernel(draw.kernel, blocks, 1, 1, k_threads, 1, 1, 0, stream, params, nullptr);
}

CUresult draw_on_device(const DriverApi& api, const InputDraw& draw, CUdeviceptr ptr,
                        const JobTensor& t) {
  DrawRecipe r = *t.draw;
  r.dtype = t.dtype;
  return draw_on_device(api, draw, ptr, r, t.bytes, CU_STREAM_LEGACY);
}

namespace {
bool has_drawn_input(const RunJob& job) {
  return std::any_of(job.tensors.begin(), job.tensors.end(),
                     [](const JobTensor& t) { return t.role != Role::output && t.draw; });
}
}  // namespace

bool draws_on_device(const RunJob& job) {
  return (!job.compare.empty() || job.hash_inputs) && has_drawn_input(job);
}

bool draws_on_device(const BenchJob& job) {
  return job.options.verify_on != VerifyOn::host &&
         std::any_of(job.variants.begin(), job.variants.end(), has_drawn_input);
}

}  // namespace kopt::cuda
