#include "kopt/problem/tensor_data.hpp"

#include <algorithm>
#include <functional>
#include <thread>

namespace kopt {
namespace {

// Runs work(begin, end) over [0, n) on the machine's cores when n is large enough to pay for
// the threads (KernelBench's inputs reach billions of elements).
void parallel_chunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& work) {
  constexpr std::size_t k_serial_below = std::size_t{1} << 22;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (n < k_serial_below || threads == 1) {
    work(0, n);
    return;
  }
  std::size_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::size_t begin = 0; begin < n; begin += chunk)
    pool.emplace_back(work, begin, std::min(n, begin + chunk));
  for (auto& t : pool) t.join();
}

}  // namespace

std::size_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto e : shape) n *= static_cast<std::size_t>(e);
  return n;
}

std::size_t HostTensor::numel() const {
  return shape_numel(shape);
}

Expected<std::vector<std::int64_t>> tensor_shape(const TensorSpec& spec, const Scope& dims) {
  std::vector<std::int64_t> shape;
  std::size_t numel = 1;
  for (std::size_t d = 0; d < spec.shape.size(); ++d) {
    auto v = spec.shape[d].evaluate_int(dims);
    if (!v) return Unexpected(v.error());
    if (*v <= 0)
      return Unexpected(bad_input("extent must be > 0, got " + std::to_string(*v), {},
                                  spec.where.line, spec.where.field + ".shape"));
    if (__builtin_mul_overflow(numel, static_cast<std::size_t>(*v), &numel) ||
        numel > (std::size_t{1} << 40))
      return Unexpected(bad_input("tensor is too large", {}, spec.where.line, spec.where.field));
    shape.push_back(*v);
  }
  return shape;
}

HostTensor draw_tensor(const DrawRecipe& r, const std::vector<std::int64_t>& shape) {
  HostTensor t{{}, r.dtype, shape, {}};
  std::size_t n = shape_numel(shape);
  t.data.resize(n * dtype_size(r.dtype));
  // Element i depends on (recipe, i) alone, so the work splits over threads with the same bytes.
  parallel_chunks(
      n, [&](std::size_t begin, std::size_t end) { draw_values(r, t.data.data(), begin, end); });
  return t;
}

HostTensor generate_tensor(const TensorSpec& spec, const std::vector<std::int64_t>& shape,
                           std::uint64_t seed) {
  HostTensor t = draw_tensor(draw_recipe(spec, seed), shape);
  t.name = spec.name;
  return t;
}

HostTensor poisoned_tensor(const TensorSpec& spec, const std::vector<std::int64_t>& shape) {
  HostTensor t{spec.name, spec.dtype, shape, {}};
  t.data.resize(shape_numel(shape) * dtype_size(spec.dtype));
  Poison p = poison_for(spec.dtype);
  parallel_chunks(t.data.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t b = begin; b < end; ++b)
      t.data[b] = static_cast<std::byte>(
          (p.pattern >> (8 * (b % static_cast<std::size_t>(p.width)))) & 0xffu);
  });
  return t;
}

std::uintmax_t problem_tensor_bytes(const Problem& p, std::optional<Role> role) {
  std::uintmax_t bytes = 0;
  Scope dims = p.dim_scope();
  for (const auto& t : p.tensors)
    if (role && t.role != *role)
      continue;
    else if (auto shape = tensor_shape(t, dims))
      bytes += shape_numel(*shape) * dtype_size(t.dtype);
  return bytes;
}

std::vector<std::int64_t> unflatten(std::size_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = static_cast<std::int64_t>(flat % static_cast<std::size_t>(shape[d]));
    flat /= static_cast<std::size_t>(shape[d]);
  }
  return idx;
}

}  // namespace kopt
