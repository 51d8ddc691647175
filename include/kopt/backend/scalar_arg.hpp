#pragma once
// A scalar kernel argument as the bytes a launch API takes: the value converted to the
// argument's dtype (floats from integers and back), little-endian, at most 8 bytes.
#include <cstddef>

#include "kopt/problem/launch.hpp"

namespace kopt {

struct ScalarBytes {
  alignas(8) unsigned char bytes[8] = {};
  std::size_t size = 0;
};
ScalarBytes scalar_bytes(const ResolvedArg& a);

}  // namespace kopt
