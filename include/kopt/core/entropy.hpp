#pragma once
// 64 bits nothing in a candidate kernel can predict, from std::random_device: which timed
// samples are verified (output_verifier.hpp), and the secret seed of a check (checker.hpp).
#include <cstdint>
#include <random>

namespace kopt {

inline std::uint64_t unpredictable_u64() {
  std::random_device entropy;
  return (std::uint64_t{entropy()} << 32) ^ entropy();
}

}  // namespace kopt
