#include "kopt/core/hash.hpp"

#include <cstring>

namespace kopt {
namespace {

constexpr std::uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

}  // namespace

Sha256::Sha256()
    : m_h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const std::uint8_t* p) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = std::uint32_t(p[4 * i]) << 24 | std::uint32_t(p[4 * i + 1]) << 16 |
           std::uint32_t(p[4 * i + 2]) << 8 | std::uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3];
  std::uint32_t e = m_h[4], f = m_h[5], g = m_h[6], h = m_h[7];
  for (int i = 0; i < 64; ++i) {
    std::uint32_t t1 =
        h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k_round[i] + w[i];
    std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  m_h[0] += a;
  m_h[1] += b;
  m_h[2] += c;
  m_h[3] += d;
  m_h[4] += e;
  m_h[5] += f;
  m_h[6] += g;
  m_h[7] += h;
}

Sha256& Sha256::update(std::span<const std::byte> data) {
  auto p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t n = data.size();
  m_total += n;
  while (n > 0) {
    std::size_t take = std::min<std::size_t>(64 - m_buf_len, n);
    std::memcpy(m_buf + m_buf_len, p, take);
    m_buf_len += take;
    p += take;
    n -= take;
    if (m_buf_len == 64) {
      block(m_buf);
      m_buf_len = 0;
    }
  }
  return *this;
}

Sha256& Sha256::update(std::string_view text) {
  return update(std::as_bytes(std::span(text.data(), text.size())));
}

Sha256& Sha256::field(std::string_view text) {
  update(std::to_string(text.size()) + ":");
  return update(text);
}

std::string Sha256::hex() {
  std::uint64_t bits = m_total * 8;
  std::uint8_t pad = 0x80;
  update(std::as_bytes(std::span(&pad, 1)));
  std::uint8_t zero = 0;
  while (m_buf_len != 56) update(std::as_bytes(std::span(&zero, 1)));
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = std::uint8_t(bits >> (56 - 8 * i));
  update(std::as_bytes(std::span(len, 8)));
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::uint32_t v : m_h)
    for (int s = 28; s >= 0; s -= 4) out += digits[(v >> s) & 0xf];
  return out;
}

std::string sha256_hex(std::string_view text) {
  return Sha256().update(text).hex();
}

std::uint64_t checksum64(std::span<const std::byte> data) {
  // FNV-1a over 8-byte words, then a final avalanche: fast and order-sensitive.
  std::uint64_t h = 0xcbf29ce484222325ull ^ data.size();
  std::size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < data.size(); ++i) h = (h ^ std::uint64_t(data[i])) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

std::string hex64(std::uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[i] = digits[value & 0xf];
  return out;
}

}  // namespace kopt
