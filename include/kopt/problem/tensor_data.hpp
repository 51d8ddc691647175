#pragma once
// Host tensors and seeded, reproducible input generation (same seed -> same bytes).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"
#include "kopt/problem/tensor_draw.hpp"

namespace kopt {

struct HostTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;

  std::size_t numel() const;
  std::size_t bytes() const { return data.size(); }
};

Expected<std::vector<std::int64_t>> tensor_shape(const TensorSpec& spec, const Scope& dims);
std::size_t shape_numel(const std::vector<std::int64_t>& shape);
// The bytes of the problem's tensors at its dims, all of them or those of one role (0 for a
// tensor whose shape fails).
std::uintmax_t problem_tensor_bytes(const Problem& p, std::optional<Role> role = std::nullopt);

// Fills a tensor from its init spec. Elements are a pure function of (seed, tensor name,
// index), so a tensor's bytes do not depend on the other tensors or on generation order.
HostTensor generate_tensor(const TensorSpec& spec, const std::vector<std::int64_t>& shape,
                           std::uint64_t seed);

// A tensor of `shape` drawn from `r` in its dtype (the same bytes as generate_tensor for the
// spec and seed the recipe came from), on the machine's cores.
HostTensor draw_tensor(const DrawRecipe& r, const std::vector<std::int64_t>& shape);

// A tensor filled with the output poison of its dtype.
HostTensor poisoned_tensor(const TensorSpec& spec, const std::vector<std::int64_t>& shape);

// "i,j,k" style multi-index of a flat row-major index, for mismatch reports.
std::vector<std::int64_t> unflatten(std::size_t flat, const std::vector<std::int64_t>& shape);

}  // namespace kopt
