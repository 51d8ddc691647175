#include "kopt/backend/cubin_resources.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

std::vector<std::byte> fixture() {
  auto bytes = read_binary_file(test::source_dir() / "tests/fixtures/cubin/two_kernels_sm90.cubin");
  EXPECT_TRUE(bytes);
  return bytes ? *bytes : std::vector<std::byte>{};
}

TEST(CubinResources, AgreeWithWhatPtxasReported) {
  auto cubin = fixture();
  auto k = cubin_resources(cubin, "k");
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->registers, 10);
  EXPECT_EQ(k->shared_static_bytes, -1);  // not read from the cubin (see the header)
  EXPECT_EQ(k->local_bytes, 0);
  EXPECT_GT(k->const_bytes, 0);
  EXPECT_EQ(k->source, "cubin");
  auto t = cubin_resources(cubin, "_Z1tILi4EEvPf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->registers, 8);
}

TEST(CubinResources, UnknownFunctionAndGarbageAreErrors) {
  auto cubin = fixture();
  EXPECT_FALSE(cubin_resources(cubin, "nope"));
  std::vector<std::byte> junk(100, std::byte{0x42});
  EXPECT_FALSE(cubin_resources(junk, "k"));
  cubin.resize(200);  // truncated: section headers are gone
  EXPECT_FALSE(cubin_resources(cubin, "k"));
}

}  // namespace
}  // namespace kopt
