#pragma once
// A keyed hash of a tensor's bytes, for comparing a timed launch's outputs with the golden
// launch's where they are, on the device, with 8 bytes crossing instead of the tensor.
//
// The bytes are read as 32-bit little-endian words (a last partial word padded with zeros);
// word i contributes mix(w_i ^ (key + i * 0x9E3779B97F4A7C15)), mix being splitmix64's
// finalizer, and the hash is the sum of the contributions modulo 2^64. For a given key and
// index the contribution is a bijection of the word, so one changed word always changes the
// hash, and several cancel only by a 2^-64 chance the kernel cannot steer: the key is drawn
// at run time, after the kernel was built, and is passed to kopt's own hashing kernel only.
// The sum does not depend on the order, so a device computes it in parallel with atomics. The
// CUDA timer's kernel implements this definition; a golden and its samples are hashed by the
// same kernel, so a kernel that strayed from it would still compare bytes with bytes.
#include <cstddef>
#include <cstdint>
#include <span>

namespace kopt {

inline constexpr std::uint64_t k_hash_index_step = 0x9E3779B97F4A7C15ull;

constexpr std::uint64_t hash_mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The contribution of 32-bit word `w` at word index `i`.
constexpr std::uint64_t hash_word(std::uint32_t w, std::uint64_t i, std::uint64_t key) {
  return hash_mix(static_cast<std::uint64_t>(w) ^ (key + i * k_hash_index_step));
}

// The hash of `bytes`, whose first word has index `first_word` (a tail hashed apart from the
// words before it).
std::uint64_t keyed_hash(std::span<const std::byte> bytes, std::uint64_t key,
                         std::uint64_t first_word = 0);

}  // namespace kopt
