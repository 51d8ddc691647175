#include "kopt/problem/launch.hpp"

#include <limits>

namespace kopt {
namespace {

Error at(const Problem& p, const SourceRef& where, std::string why) {
  return bad_input(std::move(why), p.spec_path.string(), where.line, where.field);
}

bool fits(DType t, std::int64_t v) {
  switch (t) {
    case DType::i32:
      return v >= std::numeric_limits<std::int32_t>::min() &&
             v <= std::numeric_limits<std::int32_t>::max();
    case DType::i16:
      return v >= -32768 && v <= 32767;
    case DType::i8:
      return v >= -128 && v <= 127;
    case DType::u8:
      return v >= 0 && v <= 255;
    default:
      return true;
  }
}

}  // namespace

DeviceLimits architectural_limits() {
  return DeviceLimits{};
}

std::string dim3_to_string(const std::array<std::int64_t, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         ")";
}

Expected<std::vector<ResolvedArg>> resolve_args(const Problem& problem, const KernelSpec& kernel,
                                                const ParamPoint& point) {
  Scope scope = point_scope(problem.dim_scope(), point);
  std::vector<ResolvedArg> out;
  for (const auto& a : kernel.args) {
    ResolvedArg r;
    if (!a.tensor.empty()) {
      const TensorSpec* t = problem.find_tensor(a.tensor);
      r.tensor = a.tensor;
      r.dtype = t->dtype;
      if (a.tensor_map) {
        std::string at_point = point.empty() ? "" : " at " + point_to_string(point);
        auto map = resolve_tensor_map(problem, *t, *a.tensor_map, scope, a.where, at_point);
        if (!map) return Unexpected(map.error());
        r.tensor_map = std::move(*map);
      }
      out.push_back(r);
      continue;
    }
    auto v = a.scalar.evaluate(scope);
    if (!v) return Unexpected(at(problem, a.where, v.error().message));
    r.dtype = a.scalar_dtype;
    if (is_float(r.dtype)) {
      if (r.dtype == DType::f16 || r.dtype == DType::bf16)
        return Unexpected(
            at(problem, a.where, "scalar arguments of type f16/bf16 are not supported; use f32"));
      r.value = as_double(*v);
    } else {
      if (!std::holds_alternative<std::int64_t>(*v))
        return Unexpected(
            at(problem, a.where,
               "integer argument '" + a.scalar.text() + "' evaluates to " + value_to_string(*v)));
      std::int64_t iv = std::get<std::int64_t>(*v);
      if (!fits(r.dtype, iv))
        return Unexpected(at(problem, a.where,
                             "value " + std::to_string(iv) + " of '" + a.scalar.text() +
                                 "' does not fit " + std::string(dtype_name(r.dtype)) +
                                 "; declare it { expr = ..., dtype = \"i64\" }"));
      r.value = iv;
    }
    out.push_back(r);
  }
  return out;
}

Expected<ResolvedLaunch> resolve_launch(const Problem& problem, const KernelSpec& kernel,
                                        const ParamPoint& point, const DeviceLimits& limits) {
  Scope scope = point_scope(problem.dim_scope(), point);
  scope["sm_count"] = limits.sm_count;
  ResolvedLaunch l;
  static const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    auto g = kernel.launch.grid[i].evaluate_int(scope);
    if (!g) return Unexpected(at(problem, kernel.launch.grid_where, g.error().message));
    auto b = kernel.launch.block[i].evaluate_int(scope);
    if (!b) return Unexpected(at(problem, kernel.launch.block_where, b.error().message));
    l.grid[i] = *g;
    l.block[i] = *b;
    std::string at_point = " at " + point_to_string(point);
    if (*g < 1 || *g > limits.max_grid[i])
      return Unexpected(at(problem, kernel.launch.grid_where,
                           std::string("grid.") + axis[i] + " = " + std::to_string(*g) + at_point +
                               " is outside the device limit [1, " +
                               std::to_string(limits.max_grid[i]) + "]"));
    if (*b < 1 || *b > limits.max_block[i])
      return Unexpected(at(problem, kernel.launch.block_where,
                           std::string("block.") + axis[i] + " = " + std::to_string(*b) + at_point +
                               " is outside the device limit [1, " +
                               std::to_string(limits.max_block[i]) + "]"));
  }
  std::int64_t threads = l.block[0] * l.block[1] * l.block[2];
  if (threads > limits.max_threads_per_block)
    return Unexpected(at(problem, kernel.launch.block_where,
                         "block " + dim3_to_string(l.block) + " has " + std::to_string(threads) +
                             " threads at " + point_to_string(point) + "; the device allows " +
                             std::to_string(limits.max_threads_per_block)));
  auto smem = kernel.launch.shared_mem.evaluate_int(scope);
  if (!smem) return Unexpected(at(problem, kernel.launch.shared_where, smem.error().message));
  if (*smem < 0 || *smem > limits.max_shared_per_block_optin)
    return Unexpected(at(problem, kernel.launch.shared_where,
                         "dynamic shared memory of " + std::to_string(*smem) + " bytes at " +
                             point_to_string(point) + " exceeds the device limit of " +
                             std::to_string(limits.max_shared_per_block_optin) +
                             " bytes per block"));
  l.shared_mem = *smem;
  auto args = resolve_args(problem, kernel, point);
  if (!args) return Unexpected(args.error());
  l.args = std::move(*args);
  for (const auto& d : problem.dims) l.scalars[d.name] = d.value;
  for (const auto& [name, value] : point) l.scalars[name] = value;
  return l;
}

}  // namespace kopt
