#include "tensor_map.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kopt::cuda {
namespace {

CUtensorMapDataType data_type(DType t) {
  switch (t) {
    case DType::f64:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case DType::f32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::i64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case DType::i32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::i16:
      return CU_TENSOR_MAP_DATA_TYPE_UINT16;  // TMA copies bits: signedness is moot
    case DType::i8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DType::u8:
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle swizzle_of(int bytes) {
  switch (bytes) {
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

std::string list(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

}  // namespace

std::string encode_tensor_map(const DriverApi& api, const ResolvedArg& arg, const JobTensor& tensor,
                              CUdeviceptr address, CUtensorMap& out) {
  const ResolvedTensorMap& map = *arg.tensor_map;
  std::string what = "tensor map of '" + tensor.name + "' (shape " + list(tensor.shape) + ", " +
                     std::string(dtype_name(tensor.dtype)) + ", box " + list(map.box) +
                     ", swizzle " + std::to_string(map.swizzle) + ")";
  auto layout = tensor_map_layout(tensor.shape, tensor.dtype, map);
  if (!layout) return what + ": " + layout.error().message;
  const auto rank = static_cast<cuuint32_t>(layout->dims.size());
  std::vector<cuuint64_t> dims(layout->dims.begin(), layout->dims.end());
  std::vector<cuuint64_t> strides(layout->strides.begin(), layout->strides.end());
  strides.resize(std::max<std::size_t>(strides.size(), 1));  // rank 1: none, but a valid pointer
  std::vector<cuuint32_t> box(layout->box.begin(), layout->box.end()), element_strides(rank, 1);
  CUresult r = api.tensor_map_encode_tiled(
      &out, data_type(tensor.dtype), rank, reinterpret_cast<void*>(address), dims.data(),
      strides.data(), box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzle_of(map.swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return "cuTensorMapEncodeTiled for the " + what + ": " + api.describe(r);
  return {};
}

}  // namespace kopt::cuda
