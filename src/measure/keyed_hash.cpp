#include "kopt/measure/keyed_hash.hpp"

#include <cstring>

namespace kopt {

std::uint64_t keyed_hash(std::span<const std::byte> bytes, std::uint64_t key,
                         std::uint64_t first_word) {
  std::uint64_t sum = 0;
  const std::size_t words = bytes.size() / 4;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint32_t w;
    std::memcpy(&w, bytes.data() + 4 * i, 4);
    sum += hash_word(w, first_word + i, key);
  }
  if (std::size_t tail = bytes.size() % 4; tail > 0) {
    std::uint32_t w = 0;  // little-endian, the missing bytes zero
    for (std::size_t b = 0; b < tail; ++b)
      w |= static_cast<std::uint32_t>(bytes[4 * words + b]) << (8 * b);
    sum += hash_word(w, first_word + words, key);
  }
  return sum;
}

}  // namespace kopt
