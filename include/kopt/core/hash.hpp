#pragma once
// Content hashes: SHA-256 for cache keys (collisions must not alias two builds),
// a fast 64-bit hash for tensor checksums.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kopt {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::span<const std::byte> data);
  Sha256& update(std::string_view text);
  // Adds a length prefix so that ("ab","c") and ("a","bc") hash differently.
  Sha256& field(std::string_view text);
  std::string hex();  // finalizes

 private:
  void block(const std::uint8_t* p);
  std::uint32_t m_h[8];
  std::uint8_t m_buf[64];
  std::size_t m_buf_len = 0;
  std::uint64_t m_total = 0;
};

std::string sha256_hex(std::string_view text);

// 64-bit checksum of a byte buffer (not cryptographic; detects modified tensors).
std::uint64_t checksum64(std::span<const std::byte> data);
std::string hex64(std::uint64_t value);

}  // namespace kopt
