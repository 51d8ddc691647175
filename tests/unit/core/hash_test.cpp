#include "kopt/core/hash.hpp"

#include <gtest/gtest.h>

namespace kopt {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FieldsAreLengthPrefixed) {
  EXPECT_NE(Sha256().field("ab").field("c").hex(), Sha256().field("a").field("bc").hex());
}

TEST(Checksum64, DetectsOneChangedByte) {
  std::vector<std::byte> a(1001, std::byte{7});
  auto b = a;
  b[500] = std::byte{8};
  EXPECT_NE(checksum64(a), checksum64(b));
  EXPECT_EQ(checksum64(a), checksum64(a));
  EXPECT_EQ(hex64(0x1234), "0000000000001234");
}

}  // namespace kopt
