// The CUDA timer's own kernels, the output comparison among them, compile with NVRTC (no GPU
// needed) for the architectures the spec table lists, with every entry point the timer looks
// up and no spilled registers: the comparison runs beside every verified sample.
#include "kopt/backend/cuda/timer_kernels.hpp"

#include <gtest/gtest.h>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {

class TimerKernels : public ::testing::TestWithParam<const char*> {};

TEST_P(TimerKernels, EveryEntryCompilesWithNvrtc) {
  if (auto toolkit = cuda::NvrtcCompiler().toolkit(); !toolkit)
    GTEST_SKIP() << "NVRTC is not available: " << toolkit.error().message;
  const std::string source = cuda::timer_kernels_source();
  for (const char* entry : cuda::k_timer_kernel_entries) {
    TempDir tmp("kopt-timer-kernels");
    CompileRequest req;
    req.source_path = "kopt_timer_helpers.cu";
    req.source_text = source;
    req.entry = entry;
    req.arch = GetParam();
    auto b = cuda::NvrtcCompiler().compile(req, tmp.path() / "k.cubin");
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_TRUE(b->ok) << b->log;
    EXPECT_EQ(b->lowered_entry, entry);  // extern "C": the name the timer looks up
    EXPECT_LE(b->resources.local_bytes, 0) << entry << " spills";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, TimerKernels, ::testing::Values("sm_80", "sm_90", "sm_100"));

}  // namespace
}  // namespace kopt
