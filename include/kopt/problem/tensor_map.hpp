#pragma once
// TMA tensor maps as kernel arguments: `{ tensor_map = "A", box = ["BM", "BK"], swizzle = 128 }`
// passes a CUtensorMap of tensor A by value (a `const __grid_constant__` parameter), which the
// CUDA worker encodes with cuTensorMapEncodeTiled. Here: the box at a parameter point,
// checked against TMA's rules so that a bad one is bad input, not a launch failure, and the
// layout the driver is given at the run's shape.
#include <cstdint>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

inline constexpr std::size_t k_tensor_map_max_rank = 5;
inline constexpr std::int64_t k_tensor_map_max_box = 256;

struct ResolvedTensorMap {
  std::vector<std::int64_t> box;  // one extent per dim of the tensor's shape, outermost first
  int swizzle = 0;                // bytes: 0, 32, 64 or 128
  bool operator==(const ResolvedTensorMap&) const = default;
};

// What cuTensorMapEncodeTiled is given for a tensor of `shape` (at the run's dims): the
// driver's order, innermost dim first.
struct TensorMapLayout {
  std::vector<std::uint64_t> dims;     // the shape, reversed
  std::vector<std::uint64_t> strides;  // bytes between consecutive elements of dims 1..rank-1
  std::vector<std::uint32_t> box;      // the box, reversed
};
// An Error (its message says why) where TMA cannot take the tensor: a box that is not one
// extent per dim, an extent beyond 2^32, a stride that is not a multiple of 16 bytes.
Expected<TensorMapLayout> tensor_map_layout(const std::vector<std::int64_t>& shape, DType dtype,
                                            const ResolvedTensorMap& map);

// Whether TMA has an element type for `t` (CUtensorMapDataType).
bool tensor_map_supports(DType t);
bool is_tensor_map_swizzle(std::int64_t bytes);  // 0, 32, 64, 128

// Evaluates `map`'s box for `tensor` in `scope` (dims and params) and checks it: rank 1 to 5
// and the tensor's, each extent in [1, 256], the innermost extent's bytes a multiple of 16
// and, with a swizzle, at most the swizzle's span. Errors name the file, line and `where`'s
// field (+ ".box"); `at_point` ("BM=128 BK=64") goes into them.
Expected<ResolvedTensorMap> resolve_tensor_map(const Problem& problem, const TensorSpec& tensor,
                                               const TensorMapSpec& map, const Scope& scope,
                                               const SourceRef& where, const std::string& at_point);

}  // namespace kopt
