// A kernel's arch-specific target (`arch = "sm_90a"`): the loader validates it, arch strings
// with a suffix parse to their number, and build_target builds for it where the device runs it
// and refuses, naming file, line and field, where it does not.
#include "kopt/problem/arch_target.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

TEST(ArchTarget, NumbersAndSuffixes) {
  EXPECT_EQ(arch_number("sm_90"), 90);
  EXPECT_EQ(arch_number("sm_90a"), 90);
  EXPECT_EQ(arch_number("sm_100f"), 100);
  EXPECT_EQ(arch_number("sm_"), std::nullopt);
  EXPECT_EQ(arch_number("compute_90a"), std::nullopt);
  EXPECT_EQ(arch_number("sm_90ab"), std::nullopt);
  EXPECT_EQ(arch_number("opencl"), std::nullopt);
  EXPECT_TRUE(is_arch_target("sm_100a"));
  EXPECT_FALSE(is_arch_target("sm_90b"));
  EXPECT_FALSE(is_arch_target("SM_90A"));
}

TEST(ArchTarget, WhereEachTargetRuns) {
  EXPECT_TRUE(arch_runs_on("sm_90a", "sm_90"));
  EXPECT_TRUE(arch_runs_on("sm_90a", "sm_90a"));  // --arch sm_90a
  EXPECT_FALSE(arch_runs_on("sm_90a", "sm_80"));
  EXPECT_FALSE(arch_runs_on("sm_100a", "sm_103"));
  EXPECT_TRUE(arch_runs_on("sm_100f", "sm_103"));  // a family target: later minors of its major
  EXPECT_FALSE(arch_runs_on("sm_103f", "sm_100"));
  EXPECT_FALSE(arch_runs_on("sm_100f", "sm_110"));
  EXPECT_FALSE(arch_runs_on("sm_90a", "opencl"));
}

TEST(ArchTarget, BuildsForTheKernelsTargetOnlyWhereTheDeviceRunsIt) {
  auto p = load_problem(test::source_dir() / "tests/fixtures/problems/tma_copy");
  ASSERT_TRUE(p) << p.error().to_string();
  const KernelSpec& k = p->kernels.at(0);
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_EQ(k.arch_where.field, "kernels[0].arch");
  BuildTarget on_hopper = build_target(*p, k, "sm_90");
  EXPECT_EQ(on_hopper.arch, "sm_90a");
  EXPECT_EQ(on_hopper.refused, "");
  BuildTarget on_ampere = build_target(*p, k, "sm_80");
  EXPECT_EQ(on_ampere.refused,
            p->spec_path.string() + ":" + std::to_string(k.arch_where.line) +
                ": kernels[0].arch: kernel 'tma_copy' is built for sm_90a, which runs only on "
                "sm_90 devices; this device is sm_80");
  KernelSpec plain = k;
  plain.arch.clear();
  EXPECT_EQ(build_target(*p, plain, "sm_80").arch, "sm_80");
  EXPECT_EQ(build_target(*p, plain, "sm_80").refused, "");
  KernelSpec family = k;
  family.arch = "sm_100f";
  EXPECT_NE(build_target(*p, family, "sm_90")
                .refused.find("built for sm_100f, which runs only on sm_100 and later devices of "
                              "its family (sm_10x); this device "
                              "is sm_90"),
            std::string::npos);
}

class ArchSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"kernel.cu", "kernel.cl", "kernel.py", "ref.cpp"})
      std::ofstream(m_dir.path() / f) << "//\n";
  }
  std::string error_with(const std::string& kernel_fields,
                         const std::string& reference_fields = "") {
    std::string text =
        "name = \"a\"\n[dims]\nn = 64\n"
        "[[tensors]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\nrole = \"output\"\n"
        "[reference]\nkind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"ref\"\nargs = [\"x\"]\n" +
        reference_fields +
        "[[kernels]]\nname = \"k\"\nentry = \"k\"\nargs = [\"x\"]\ngrid = [1]\nblock = [32]\n" +
        kernel_fields;
    auto p = parse_problem(text, m_dir.path() / "kopt.toml");
    if (p)
      return "parsed " + (p->kernels.at(0).arch.empty() ? std::string("-") : p->kernels.at(0).arch);
    EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
    std::string msg = p.error().to_string();
    return msg.substr(msg.find("kopt.toml"));
  }
  TempDir m_dir{"kopt-arch-spec"};
};

TEST_F(ArchSpec, ValidatedAndOnlyForCudaKernels) {
  EXPECT_EQ(error_with("source = \"kernel.cu\"\narch = \"sm_90a\"\n"), "parsed sm_90a");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\narch = \"sm_100f\"\n"), "parsed sm_100f");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\n"), "parsed -");
  EXPECT_EQ(error_with("source = [\"kernel.cu\", \"kernel.cl\"]\narch = \"sm_90a\"\n"),
            "parsed sm_90a");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\narch = \"sm90a\"\n"),
            "kopt.toml:21: kernels[0].arch: unknown arch 'sm90a': expected sm_<digits>, optionally "
            "with an a or f "
            "suffix (sm_90a, sm_100a, sm_100f)");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\narch = \"compute_90a\"\n").substr(0, 48),
            "kopt.toml:21: kernels[0].arch: unknown arch 'com");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\narch = 90\n"),
            "kopt.toml:21: kernels[0].arch: expected a string");
  EXPECT_EQ(error_with("source = \"kernel.cl\"\narch = \"sm_90a\"\n"),
            "kopt.toml:21: kernels[0].arch: an arch target is for CUDA kernels: kernel 'k' has no "
            "CUDA (.cu) source");
  EXPECT_EQ(error_with("source = \"kernel.py\"\narch = \"sm_90a\"\n"),
            "kopt.toml:21: kernels[0].arch: an arch target is for CUDA kernels: kernel 'k' has no "
            "CUDA (.cu) source");
  EXPECT_EQ(error_with("source = \"kernel.cu\"\n", "arch = \"sm_90a\"\n"),
            "kopt.toml:14: reference.arch: an arch target is for CUDA kernels: the reference is of "
            "kind \"cpp\"");
}

}  // namespace
}  // namespace kopt
