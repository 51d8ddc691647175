#pragma once
// A kernel's launch for one parameter point: grid, block, dynamic shared memory, arguments.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/problem/problem.hpp"
#include "kopt/problem/tensor_map.hpp"

namespace kopt {

struct ResolvedArg {
  std::string tensor;  // non-empty: a device pointer to this tensor
  DType dtype = DType::i32;
  Value value{std::int64_t{0}};                 // scalar value
  std::optional<ResolvedTensorMap> tensor_map;  // with `tensor`: a CUtensorMap of it, by value
};

struct ResolvedLaunch {
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t shared_mem = 0;
  std::vector<ResolvedArg> args;
  std::map<std::string, std::int64_t>
      scalars;  // every dim and param by name (Python kernels' kwargs)
};

// The device limits a launch must respect (from the device, or CUDA's architectural ones).
struct DeviceLimits {
  std::int64_t max_threads_per_block = 1024;
  std::array<std::int64_t, 3> max_block{1024, 1024, 64};
  std::array<std::int64_t, 3> max_grid{2147483647, 65535, 65535};
  std::int64_t max_shared_per_block_optin = 227 * 1024;  // sm_90 opt-in; the device refines it
  // Exposed to launch expressions as `sm_count` (H100 SXM's count until a device is known).
  std::int64_t sm_count = 132;
};
DeviceLimits architectural_limits();  // valid for every GPU of compute capability >= 3.0

// Evaluates the launch expressions at `point` and checks them against `limits`; errors name
// the spec file, line and field.
Expected<ResolvedLaunch> resolve_launch(const Problem& problem, const KernelSpec& kernel,
                                        const ParamPoint& point, const DeviceLimits& limits);

// Scalar arguments only (the C++ reference takes no launch shape).
Expected<std::vector<ResolvedArg>> resolve_args(const Problem& problem, const KernelSpec& kernel,
                                                const ParamPoint& point);

// For a backend that cannot pass tensor maps (OpenCL, Triton, the C++ reference, solve()):
// why it refuses `args`, naming the first tensor-map argument; empty when there is none.
std::string tensor_map_refusal(const std::vector<ResolvedArg>& args, std::string_view backend);

std::string dim3_to_string(const std::array<std::int64_t, 3>& d);

}  // namespace kopt
