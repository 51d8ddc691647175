// kopt's own kernels compile with NVRTC (no GPU needed) for the architectures the spec table
// lists, with every entry point the worker looks up and nothing spilled: the memory-ceiling
// kernels, and the timer's (the blocking kernel, the L2 flush, the keyed hash, and the output
// comparison and masked copy, which run beside every verified sample).
#include "kopt/backend/cuda/ceiling_kernels.hpp"

#include <gtest/gtest.h>

#include <span>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/cuda/timer_kernels.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

void expect_each_entry_compiles(const std::string& source, const char* file,
                                std::span<const char* const> entries, const char* arch) {
  for (const char* entry : entries) {
    TempDir tmp("kopt-own-kernels");
    CompileRequest req;
    req.source_path = file;
    req.source_text = source;
    req.entry = entry;
    req.arch = arch;
    auto b = cuda::NvrtcCompiler().compile(req, tmp.path() / "k.cubin");
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_TRUE(b->ok) << b->log;
    EXPECT_EQ(b->lowered_entry, entry);  // extern "C": the name the worker looks up
    EXPECT_LE(b->resources.local_bytes, 0) << entry << " spills";
  }
}

class CeilingKernels : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (auto toolkit = cuda::NvrtcCompiler().toolkit(); !toolkit)
      GTEST_SKIP() << "NVRTC is not available: " << toolkit.error().message;
  }
};

TEST_P(CeilingKernels, TheStreamingKernelsCompileWithNvrtc) {
  const char* const entries[] = {cuda::k_stream_copy_entry, cuda::k_stream_copy_cs_entry,
                                 cuda::k_copy_flat_entry, cuda::k_add_flat_entry,
                                 cuda::k_ceiling_flush_entry};
  expect_each_entry_compiles(cuda::k_stream_copy_source, "kopt_stream_copy.cu", entries,
                             GetParam());
}

TEST_P(CeilingKernels, TheTimersKernelsCompileWithNvrtc) {
  expect_each_entry_compiles(cuda::timer_kernels_source(), "kopt_timer_helpers.cu",
                             cuda::k_timer_kernel_entries, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Archs, CeilingKernels, ::testing::Values("sm_80", "sm_90", "sm_100"));

}  // namespace
}  // namespace kopt
