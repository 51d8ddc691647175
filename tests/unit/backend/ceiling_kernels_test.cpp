// kopt's own memory-ceiling kernels compile with NVRTC (no GPU needed) for the architectures
// the spec table lists, with every entry point the worker looks up.
#include "kopt/backend/cuda/ceiling_kernels.hpp"

#include <gtest/gtest.h>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

class CeilingKernels : public ::testing::TestWithParam<const char*> {};

TEST_P(CeilingKernels, TheStreamingKernelsCompileWithNvrtc) {
  if (auto toolkit = cuda::NvrtcCompiler().toolkit(); !toolkit)
    GTEST_SKIP() << "NVRTC is not available: " << toolkit.error().message;
  for (const char* entry :
       {cuda::k_stream_copy_entry, cuda::k_stream_copy_cs_entry, cuda::k_copy_flat_entry,
        cuda::k_add_flat_entry, cuda::k_ceiling_flush_entry}) {
    TempDir tmp("kopt-ceiling-kernels");
    CompileRequest req;
    req.source_path = "kopt_stream_copy.cu";
    req.source_text = cuda::k_stream_copy_source;
    req.entry = entry;
    req.arch = GetParam();
    auto b = cuda::NvrtcCompiler().compile(req, tmp.path() / "k.cubin");
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_TRUE(b->ok) << b->log;
    EXPECT_EQ(b->lowered_entry, entry);  // extern "C": the name the worker looks up
    EXPECT_LE(b->resources.local_bytes, 0) << "a copy loop must not spill";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, CeilingKernels, ::testing::Values("sm_80", "sm_90", "sm_100"));

}  // namespace
}  // namespace kopt
