#include "kopt/problem/tensor_map.hpp"

#include "kopt/problem/launch.hpp"

namespace kopt {

bool tensor_map_supports(DType t) {
  // Every kopt dtype has a CUtensorMapDataType of its width (i8/i16 copy as u8/u16 bits);
  // a new DType makes this switch warn until it is decided.
  switch (t) {
    case DType::f64:
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u8:
      return true;
  }
  return false;
}

bool is_tensor_map_swizzle(std::int64_t bytes) {
  return bytes == 0 || bytes == 32 || bytes == 64 || bytes == 128;
}

Expected<ResolvedTensorMap> resolve_tensor_map(const Problem& problem, const TensorSpec& tensor,
                                               const TensorMapSpec& map, const Scope& scope,
                                               const SourceRef& where,
                                               const std::string& at_point) {
  auto fail = [&](const std::string& why) {
    return Unexpected(bad_input(why, problem.spec_path.string(), where.line, where.field + ".box"));
  };
  const std::size_t rank = tensor.shape.size();
  if (rank < 1 || rank > k_tensor_map_max_rank)
    return fail("a tensor map has 1 to 5 dims; tensor '" + tensor.name + "' has " +
                std::to_string(rank));
  if (map.box.size() != rank)
    return fail("expected " + std::to_string(rank) + " extents, one per dim of tensor '" +
                tensor.name + "' (outermost first), got " + std::to_string(map.box.size()));
  ResolvedTensorMap out;
  out.swizzle = map.swizzle;
  for (std::size_t d = 0; d < rank; ++d) {
    auto v = map.box[d].evaluate_int(scope);
    if (!v) return fail("box[" + std::to_string(d) + "]: " + v.error().message);
    if (*v < 1 || *v > k_tensor_map_max_box)
      return fail("box[" + std::to_string(d) + "] = " + std::to_string(*v) + at_point +
                  " is outside [1, " + std::to_string(k_tensor_map_max_box) + "]");
    out.box.push_back(*v);
  }
  const std::int64_t size = static_cast<std::int64_t>(dtype_size(tensor.dtype));
  const std::int64_t inner = out.box.back() * size;
  std::string inner_text = "the innermost box extent " + std::to_string(out.box.back()) + " x " +
                           std::to_string(size) + " bytes (" +
                           std::string(dtype_name(tensor.dtype)) + ") = " + std::to_string(inner) +
                           " bytes" + at_point;
  if (inner % 16 != 0) return fail(inner_text + " is not a multiple of 16 bytes");
  if (map.swizzle > 0 && inner > map.swizzle)
    return fail(inner_text + " exceeds the " + std::to_string(map.swizzle) +
                "-byte swizzle span (a box row must fit in it)");
  return out;
}

Expected<TensorMapLayout> tensor_map_layout(const std::vector<std::int64_t>& shape, DType dtype,
                                            const ResolvedTensorMap& map) {
  const std::size_t rank = shape.size();
  if (rank < 1 || rank > k_tensor_map_max_rank || map.box.size() != rank)
    return Unexpected(bad_input("the box needs one extent per dim of the tensor, 1 to 5 of them"));
  TensorMapLayout out;
  std::uint64_t stride = dtype_size(dtype);  // bytes between consecutive elements of the dim
  for (std::size_t r = 0; r < rank; ++r) {
    const std::size_t d = rank - 1 - r;  // the dim in the shape's order
    if (shape[d] < 1 || shape[d] > (std::int64_t{1} << 32))
      return Unexpected(bad_input("dim " + std::to_string(d) + " has extent " +
                                  std::to_string(shape[d]) + ", outside TMA's [1, 2^32]"));
    if (r > 0) {
      if (stride % 16 != 0 || stride >= (std::uint64_t{1} << 40))
        return Unexpected(
            bad_input("a step along dim " + std::to_string(d) + " is " + std::to_string(stride) +
                      " bytes, which TMA needs to be a multiple of 16 (and below 2^40); the inner "
                      "extents at this shape do not make 16-byte rows"));
      out.strides.push_back(stride);
    }
    out.dims.push_back(static_cast<std::uint64_t>(shape[d]));
    out.box.push_back(static_cast<std::uint32_t>(map.box[d]));
    stride *= static_cast<std::uint64_t>(shape[d]);
  }
  return out;
}

std::string tensor_map_refusal(const std::vector<ResolvedArg>& args, std::string_view backend) {
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].tensor_map)
      return "argument " + std::to_string(i) + " is a tensor map of '" + args[i].tensor +
             "' (tensor_map), which only a CUDA kernel takes; " + std::string(backend) +
             " cannot pass one";
  return {};
}

}  // namespace kopt
