// Builds for a kernel's arch-specific target: NVRTC (no GPU needed) compiles an sm_90a-only
// instruction for sm_90a and refuses it for sm_90; compile_request builds the tma_copy
// fixture for sm_90a on an sm_90 device, and on an sm_80 one gives a failed build that says
// why, without compiling and without a cache entry.
#include <gtest/gtest.h>

#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

#define KOPT_SKIP_WITHOUT_NVRTC()                                         \
  if (auto kopt_toolkit = cuda::NvrtcCompiler().toolkit(); !kopt_toolkit) \
  GTEST_SKIP() << "NVRTC is not available: " << kopt_toolkit.error().message

// Counts compiles; every build "succeeds" with a fake cubin.
class CountingCompiler final : public Compiler {
 public:
  Expected<std::string> toolkit() override { return std::string("fake 1.0"); }
  Expected<Build> compile(const CompileRequest& req, const fs::path& cubin) override {
    ++compiles;
    (void)write_text_atomic(cubin, "cubin");
    Build b;
    b.ok = true;
    b.arch = req.arch;
    b.cubin_path = cubin;
    return b;
  }
  int compiles = 0;
};

Problem tma_copy() {
  auto p = load_problem(test::source_dir() / "tests/fixtures/problems/tma_copy");
  EXPECT_TRUE(p) << p.error().to_string();
  return *p;
}

TEST(ArchTargetBuild, AnArchTheDeviceCannotRunIsAFailedBuildThatIsNeverCompiledOrCached) {
  Problem p = tma_copy();
  const KernelSpec& k = p.kernels.at(0);
  auto point = default_point(p, k);
  ASSERT_TRUE(point);
  CompileRequest req = evaluate::compile_request(p, k, *point, "sm_80");
  EXPECT_EQ(req.arch, "sm_90a");
  std::string why =
      p.spec_path.string() + ":" + std::to_string(k.arch_where.line) +
      ": kernels[0].arch: kernel 'tma_copy' is built for sm_90a, which runs only on sm_90 devices; "
      "this device is sm_80";
  EXPECT_EQ(req.refused, why);

  TempDir dir("kopt-arch-build");
  CountingCompiler compiler;
  BuildCache cache(compiler, dir.path() / "builds");
  for (int i = 0; i < 2; ++i) {
    auto b = cache.build(req);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_FALSE(b->ok);
    EXPECT_EQ(b->log, why);
    EXPECT_EQ(b->arch, "sm_90a");
    EXPECT_FALSE(b->from_cache);
  }
  EXPECT_EQ(compiler.compiles, 0);
  EXPECT_FALSE(fs::exists(dir.path() / "builds"));
  // Its key is no real build's: the same target on a device that runs it builds for real.
  CompileRequest on_hopper = evaluate::compile_request(p, k, *point, "sm_90");
  EXPECT_EQ(on_hopper.arch, "sm_90a");
  EXPECT_EQ(on_hopper.refused, "");
  EXPECT_NE(*cache.key(req), *cache.key(on_hopper));
  auto b = cache.build(on_hopper);
  ASSERT_TRUE(b && b->ok);
  EXPECT_EQ(compiler.compiles, 1);
  // The request crosses the worker protocol with its refusal.
  EXPECT_EQ(compile_request_from_json(to_json(req)).refused, why);
  // A compiler handed a refused request directly refuses it too.
  auto direct = cuda::NvrtcCompiler().compile(req, dir.path() / "k.cubin");
  ASSERT_TRUE(direct);
  EXPECT_FALSE(direct->ok);
  EXPECT_EQ(direct->log, why);
}

TEST(ArchTargetBuild, NvrtcBuildsTheTmaFixtureForSm90a) {
  KOPT_SKIP_WITHOUT_NVRTC();
  Problem p = tma_copy();
  const KernelSpec& k = p.kernels.at(0);
  TempDir dir("kopt-arch-build");
  cuda::NvrtcCompiler compiler;
  BuildCache cache(compiler, dir.path() / "builds");
  for (const auto& point :
       {ParamPoint{{"BR", 32}, {"BC", 64}}, ParamPoint{{"BR", 64}, {"BC", 32}}}) {
    auto b = cache.build(evaluate::compile_request(p, k, point, "sm_90"));
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_TRUE(b->ok) << b->log;
    EXPECT_EQ(b->arch, "sm_90a");
    EXPECT_EQ(b->lowered_entry, "tma_copy");
  }
}

Expected<Build> compile_for(const std::string& arch, const std::string& text, const fs::path& out) {
  CompileRequest req;
  req.source_path = "wgmma_fence.cu";
  req.source_text = text;
  req.entry = "k";
  req.arch = arch;
  return cuda::NvrtcCompiler().compile(req, out);
}

TEST(ArchTargetBuild, NvrtcCompilesAnSm90aOnlyInstructionForSm90aAlone) {
  KOPT_SKIP_WITHOUT_NVRTC();
  TempDir dir("kopt-arch-build");
  const std::string text =
      "extern \"C\" __global__ void k(float* x) {\n  asm "
      "volatile(\"wgmma.fence.sync.aligned;\");\n  x[0] = 1.f;\n}\n";
  auto a = compile_for("sm_90a", text, dir.path() / "a.cubin");
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_TRUE(a->ok) << a->log;
  EXPECT_EQ(a->arch, "sm_90a");
  auto plain = compile_for("sm_90", text, dir.path() / "p.cubin");
  ASSERT_TRUE(plain) << plain.error().to_string();
  EXPECT_FALSE(plain->ok);
  EXPECT_NE(plain->log.find("wgmma"), std::string::npos) << plain->log;
}

}  // namespace
}  // namespace kopt
