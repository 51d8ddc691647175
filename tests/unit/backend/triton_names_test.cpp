// ncu picks a Triton kernel's GPU kernels by the names of its @triton.jit functions.
#include <gtest/gtest.h>

#include "kopt/backend/python/triton_compiler.hpp"

namespace kopt {
namespace {

TEST(TritonKernelNames, TheJitFunctionsAreNamedDecoratorsAndAll) {
  std::string src =
      "import triton\n"
      "@triton.autotune(configs=[], key=['n'])\n"
      "@triton.jit\n"
      "def _attn_fwd(Q, K, BLOCK: tl.constexpr):\n"
      "    pass\n\n"
      "@triton.jit(do_not_specialize=['n'])\n"
      "@triton.heuristics({'EVEN': lambda a: True})\n"
      "def helper_kernel (x):\n"
      "    pass\n\n"
      "def run_kernel(Q, K, **_):\n"
      "    _attn_fwd[(1,)](Q, K, BLOCK=64)\n";
  EXPECT_EQ(triton_kernel_names(src), (std::vector<std::string>{"_attn_fwd", "helper_kernel"}));
  EXPECT_TRUE(triton_kernel_names("import torch\ndef run_math(Q):\n    return Q\n").empty());
}

}  // namespace
}  // namespace kopt
