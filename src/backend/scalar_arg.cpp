#include "kopt/backend/scalar_arg.hpp"

#include <cstdint>
#include <cstring>

namespace kopt {

ScalarBytes scalar_bytes(const ResolvedArg& a) {
  ScalarBytes s;
  auto put = [&](auto v) {
    std::memcpy(s.bytes, &v, sizeof v);
    s.size = sizeof v;
  };
  if (std::holds_alternative<double>(a.value)) {
    double v = std::get<double>(a.value);
    if (a.dtype == DType::f64)
      put(v);
    else
      put(static_cast<float>(v));
    return s;
  }
  std::int64_t v = std::get<std::int64_t>(a.value);
  switch (a.dtype) {
    case DType::i64:
      put(v);
      break;
    case DType::i32:
      put(static_cast<std::int32_t>(v));
      break;
    case DType::i16:
      put(static_cast<std::int16_t>(v));
      break;
    case DType::i8:
      put(static_cast<std::int8_t>(v));
      break;
    case DType::u8:
      put(static_cast<std::uint8_t>(v));
      break;
    case DType::f64:
      put(static_cast<double>(v));
      break;
    default:
      put(static_cast<float>(v));
      break;
  }
  return s;
}

}  // namespace kopt
