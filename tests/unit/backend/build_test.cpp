#include "kopt/backend/build.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/backend/build_cache.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

TEST(PtxasInfo, ParsesTheReportOfTheNamedEntryOnly) {
  auto log = read_text_file(test::source_dir() / "tests/fixtures/ptxas/two_kernels_sm90.log");
  ASSERT_TRUE(log);
  ResourceUsage k = parse_ptxas_info(*log, "k");
  EXPECT_EQ(k.registers, 10);
  EXPECT_EQ(k.shared_static_bytes, 256);
  EXPECT_EQ(k.local_bytes, 0);
  EXPECT_EQ(k.spill_store_bytes, 0);
  EXPECT_EQ(k.source, "ptxas");
  ResourceUsage t = parse_ptxas_info(*log, "_Z1tILi4EEvPf");
  EXPECT_EQ(t.registers, 8);
  EXPECT_EQ(t.shared_static_bytes, 0);
  ResourceUsage none = parse_ptxas_info(*log, "missing");
  EXPECT_EQ(none.registers, -1);
}

TEST(PtxasInfo, SpillsAndStackFrames) {
  std::string log =
      "ptxas info    : Compiling entry function 'big' for 'sm_90'\n"
      "ptxas info    : Function properties for big\n"
      "ptxas         .     96 bytes stack frame, 64 bytes spill stores, 48 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]\n";
  ResourceUsage r = parse_ptxas_info(log, "big");
  EXPECT_EQ(r.registers, 255);
  EXPECT_EQ(r.local_bytes, 96);
  EXPECT_EQ(r.spill_store_bytes, 64);
  EXPECT_EQ(r.spill_load_bytes, 48);
  EXPECT_EQ(r.shared_static_bytes, 4096);
  EXPECT_EQ(r.const_bytes, 380);
}

// Counts compiles and writes a fake cubin, so the cache's decisions can be observed.
class CountingCompiler final : public Compiler {
 public:
  Expected<std::string> toolkit() override { return m_toolkit; }
  Expected<Build> compile(const CompileRequest& req, const fs::path& cubin) override {
    ++compiles;
    Build b;
    b.ok = req.source_text.find("syntax error") == std::string::npos;
    b.log = b.ok ? "" : "kernel.cu(1): error: syntax error";
    if (b.ok) {
      std::ofstream(cubin) << "cubin for " << req.entry;
      b.cubin_path = cubin;
      b.lowered_entry = req.entry;
    }
    return b;
  }
  int compiles = 0;
  std::string m_toolkit = "FAKE 1.0";
};

class BuildCacheTest : public ::testing::Test {
 protected:
  CompileRequest request(const std::string& text) {
    CompileRequest req;
    req.source_path = dir.path() / "kernel.cu";
    req.source_text = text;
    req.entry = "k";
    return req;
  }
  TempDir dir{"kopt-cache-test"};
  CountingCompiler compiler;
  BuildCache cache{compiler, dir.path() / "builds"};
};

TEST_F(BuildCacheTest, SameRequestIsBuiltOnce) {
  CompileRequest req = request("__global__ void k() {}");
  req.defines = {{"BLOCK", "256"}};
  auto a = cache.build(req);
  auto b = cache.build(req);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_FALSE(a->from_cache);
  EXPECT_TRUE(b->from_cache);
  EXPECT_EQ(a->key, b->key);
  EXPECT_TRUE(fs::is_regular_file(b->cubin_path));
}

TEST_F(BuildCacheTest, EveryInputThatShapesTheBinaryChangesTheKey) {
  CompileRequest base = request("__global__ void k() {}");
  auto key0 = *cache.key(base);
  auto changed = [&](auto mutate) {
    CompileRequest r = base;
    mutate(r);
    return *cache.key(r);
  };
  EXPECT_NE(key0, changed([](CompileRequest& r) { r.defines = {{"BLOCK", "128"}}; }));
  EXPECT_NE(key0, changed([](CompileRequest& r) { r.arch = "sm_80"; }));
  EXPECT_NE(key0, changed([](CompileRequest& r) { r.options = {"--use_fast_math"}; }));
  EXPECT_NE(key0, changed([](CompileRequest& r) { r.entry = "k2"; }));
  EXPECT_NE(key0, changed([](CompileRequest& r) { r.source_text += " "; }));
  std::ofstream(dir.path() / "common.cuh") << "#define X 1\n";
  auto with_header = *cache.key(base);
  EXPECT_NE(key0, with_header);  // a header beside the source may be #included
  std::ofstream(dir.path() / "common.cuh") << "#define X 2\n";
  EXPECT_NE(with_header, *cache.key(base));
  compiler.m_toolkit = "FAKE 2.0";
  EXPECT_NE(*cache.key(base), with_header);
}

TEST_F(BuildCacheTest, CompileFailuresAreResultsAndAreCachedToo) {
  CompileRequest req = request("syntax error");
  auto a = cache.build(req);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->ok);
  EXPECT_EQ(a->log, "kernel.cu(1): error: syntax error");
  auto b = cache.build(req);
  EXPECT_TRUE(b->from_cache);
  EXPECT_EQ(compiler.compiles, 1);
}

TEST_F(BuildCacheTest, DamagedRecordIsRebuilt) {
  CompileRequest req = request("ok");
  auto a = cache.build(req);
  ASSERT_TRUE(a);
  std::ofstream(a->cubin_path.parent_path() / "build.json") << "{ truncated";
  auto b = cache.build(req);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->from_cache);
  EXPECT_EQ(compiler.compiles, 2);
}

}  // namespace
}  // namespace kopt
