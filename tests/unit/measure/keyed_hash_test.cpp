// The keyed hash that compares a timed launch's outputs where they are (keyed_hash.hpp).
#include "kopt/measure/keyed_hash.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace kopt {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

TEST(KeyedHash, EveryChangedByteChangesTheHash) {
  const std::vector<std::byte> bytes = random_bytes(1027, 1);  // a partial last word
  const std::uint64_t h = keyed_hash(bytes, 42);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit : {0, 7}) {
      std::vector<std::byte> b = bytes;
      b[i] ^= static_cast<std::byte>(1 << bit);
      EXPECT_NE(keyed_hash(b, 42), h) << "byte " << i << " bit " << bit;
    }
}

TEST(KeyedHash, WordsSwappedOrMovedChangeIt) {
  std::vector<std::byte> bytes = random_bytes(64, 2);
  const std::uint64_t h = keyed_hash(bytes, 7);
  std::vector<std::byte> swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 4, swapped.begin() + 4);
  EXPECT_NE(keyed_hash(swapped, 7), h);
  // The same words one place later (an output written at an offset).
  std::vector<std::byte> shifted(4);
  shifted.insert(shifted.end(), bytes.begin(), bytes.end() - 4);
  EXPECT_NE(keyed_hash(shifted, 7), h);
}

TEST(KeyedHash, AnotherKeyAnotherHashAndTheTailHashedApartAddsUp) {
  const std::vector<std::byte> bytes = random_bytes(4099, 3);
  std::set<std::uint64_t> seen;
  for (std::uint64_t key = 0; key < 64; ++key) seen.insert(keyed_hash(bytes, key));
  EXPECT_EQ(seen.size(), 64u);
  // As the CUDA timer computes it: the whole words on the device, the tail on the host.
  const std::size_t words = bytes.size() / 4;
  std::span<const std::byte> all(bytes);
  EXPECT_EQ(keyed_hash(all.first(4 * words), 9) + keyed_hash(all.subspan(4 * words), 9, words),
            keyed_hash(all, 9));
  // Order does not matter: two halves add up (the device's blocks, in any order).
  EXPECT_EQ(keyed_hash(all.first(2048), 9) + keyed_hash(all.subspan(2048), 9, 512),
            keyed_hash(all, 9));
}

TEST(KeyedHash, TheTailIsOneWordPaddedWithZeros) {
  // The size is the job's, never the kernel's: three bytes hash as their zero-padded word.
  std::vector<std::byte> three(3, std::byte{0x5a}), four(4, std::byte{0x5a});
  four[3] = std::byte{0};
  EXPECT_EQ(keyed_hash(three, 5), keyed_hash(four, 5));
  EXPECT_EQ(keyed_hash(three, 5), hash_word(0x5a5a5a, 0, 5));
  EXPECT_EQ(keyed_hash(std::vector<std::byte>{}, 5), 0u);
}

}  // namespace
}  // namespace kopt
