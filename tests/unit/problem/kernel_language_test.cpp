// Kernels in several languages: `source = [...]`, and the backend's choice among them.
#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
namespace {

const char* k_spec = R"TOML(name = "ports"
[dims]
n = 64
[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "output"
[reference]
kind = "cpp"
source = "ref.cpp"
entry = "ref"
args = ["x"]
[[kernels]]
name = "both"
source = ["k.cu", "k.cl"]
entry = "k"
args = ["x"]
grid = [1]
block = [64]
[[kernels]]
name = "cuda_only"
source = "k.cu"
entry = "k"
args = ["x"]
grid = [1]
block = [64]
)TOML";

class KernelLanguageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"k.cu", "k.cl", "k2.cl", "ref.cpp", "k.txt", "k.py"})
      std::ofstream(m_dir.path() / f) << "//\n";
  }
  Expected<Problem> parse(const std::string& text) {
    return parse_problem(text, m_dir.path() / "kopt.toml");
  }
  std::string error_with(const std::string& from, const std::string& to) {
    std::string text = k_spec;
    text.replace(text.find(from), from.size(), to);
    auto p = parse(text);
    return p ? "parsed"
             : p.error().message + " @" + std::to_string(p.error().line) + " " + p.error().field;
  }
  TempDir m_dir{"kopt-language-test"};
};

TEST_F(KernelLanguageTest, LanguageComesFromTheExtension) {
  EXPECT_EQ(kernel_language_of("a/kernel.cu"), KernelLanguage::cuda);
  EXPECT_EQ(kernel_language_of("kernel.cl"), KernelLanguage::opencl);
  EXPECT_EQ(kernel_language_of("kernel.py"), KernelLanguage::triton);
  EXPECT_FALSE(kernel_language_of("kernel.txt"));
}

TEST_F(KernelLanguageTest, EachDeviceKeepsTheKernelsItHasASourceFor) {
  auto p = parse(k_spec);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->kernels[0].sources.size(), 2u);
  EXPECT_EQ(p->kernels[0].source, "k.cu");  // the first, until a backend chooses

  Problem cl = *p;
  ASSERT_TRUE(select_runnable(cl, {KernelLanguage::opencl}));
  ASSERT_EQ(cl.kernels.size(), 1u);
  EXPECT_EQ(cl.kernels[0].name, "both");
  EXPECT_EQ(cl.kernels[0].source, "k.cl");
  EXPECT_EQ(cl.skipped_kernels, (std::vector<std::string>{"cuda_only"}));

  Problem cu = *p;
  ASSERT_TRUE(select_runnable(cu, {KernelLanguage::cuda, KernelLanguage::triton}));
  EXPECT_EQ(cu.kernels.size(), 2u);
  EXPECT_TRUE(cu.skipped_kernels.empty());
}

// The backend belongs to the kernel: on a CUDA GPU a problem's CUDA C++ and Triton kernels
// stay side by side, each with its own source (19_ReLU's vec, solve and triton).
TEST_F(KernelLanguageTest, ACudaDeviceKeepsCudaAndTritonKernelsSideBySide) {
  auto p = parse(std::string(k_spec) +
                 "[[kernels]]\nname = \"triton\"\nsource = \"k.py\"\nentry = \"run_kernel\"\n");
  ASSERT_TRUE(p) << p.error().to_string();
  Problem cu = *p;
  ASSERT_TRUE(select_runnable(cu, {KernelLanguage::cuda, KernelLanguage::triton}));
  ASSERT_EQ(cu.kernels.size(), 3u);
  EXPECT_EQ(cu.kernels[0].source, "k.cu");
  EXPECT_EQ(cu.kernels[2].name, "triton");
  EXPECT_EQ(cu.kernels[2].source, "k.py");
  EXPECT_TRUE(cu.skipped_kernels.empty());
  Problem cl = *p;
  ASSERT_TRUE(select_runnable(cl, {KernelLanguage::opencl}));
  EXPECT_EQ(cl.skipped_kernels, (std::vector<std::string>{"cuda_only", "triton"}));
}

TEST_F(KernelLanguageTest, NoKernelLeftIsBadInput) {
  std::string text = k_spec;
  text.replace(text.find("[\"k.cu\", \"k.cl\"]"), 16, "\"k.cu\"");
  auto p = parse(text);
  ASSERT_TRUE(p);
  auto chosen = select_runnable(*p, {KernelLanguage::opencl});
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error().kind, ErrorKind::bad_input);
  EXPECT_NE(chosen.error().message.find("no kernel of this problem has a source in OpenCL (.cl)"),
            std::string::npos);
}

TEST_F(KernelLanguageTest, ACudaReferenceCannotRunOnOpenCL) {
  std::string text = k_spec;
  text.replace(
      text.find("kind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"ref\"\nargs = [\"x\"]"),
      std::string("kind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"ref\"\nargs = [\"x\"]").size(),
      "kind = \"cuda\"\nsource = \"k.cu\"\nentry = \"ref\"\nargs = [\"x\"]\ngrid = [1]\nblock = "
      "[64]");
  auto p = parse(text);
  ASSERT_TRUE(p) << p.error().to_string();
  auto chosen = select_runnable(*p, {KernelLanguage::opencl});
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error().field, "reference.kind");
  EXPECT_EQ(chosen.error().line, 9);  // [reference]
  EXPECT_NE(chosen.error().message.find("give a C++ reference"), std::string::npos);
}

TEST_F(KernelLanguageTest, BadSourceListsNameTheField) {
  EXPECT_EQ(error_with("[\"k.cu\", \"k.cl\"]", "[\"k.cl\", \"k2.cl\"]"),
            "two sources in OpenCL for one kernel @16 kernels[0].source[1]");
  EXPECT_EQ(error_with("[\"k.cu\", \"k.cl\"]", "[\"k.cu\", \"k.txt\"]"),
            "'k.txt': a kernel in several languages needs .cu, .cl or .py sources @16 "
            "kernels[0].source[1]");
  EXPECT_EQ(error_with("[\"k.cu\", \"k.cl\"]", "[]"),
            "expected a file name, or a non-empty array of them @16 kernels[0].source");
  EXPECT_NE(error_with("[\"k.cu\", \"k.cl\"]", "[\"k.cu\", \"missing.cl\"]").find("file not found"),
            std::string::npos);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// A fresh import has no kernels yet: it loads (its reference and baselines can run), and a
// command that needs a kernel says what to add.
TEST_F(KernelLanguageTest, AProblemWithoutKernelsLoadsAndSelectingSaysWhatToAdd) {
  std::string text = k_spec;
  text = text.substr(0, text.find("[[kernels]]"));
  auto p = parse(text);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_TRUE(p->kernels.empty());
  auto chosen = select_runnable(*p, {KernelLanguage::cuda});
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(chosen.error().field, "kernels");
  EXPECT_NE(chosen.error().message.find("add a [[kernels]] table"), std::string::npos);
}

TEST_F(KernelLanguageTest, CostMayLeaveFlopsOutButNotBytes) {
  std::string text = k_spec;
  auto p = parse(text + "[cost]\nbytes = \"n * 4\"\n");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_TRUE(p->cost->flops.empty());
  EXPECT_FALSE(p->cost_at_dims().flops);
  EXPECT_EQ(*p->cost_at_dims().bytes, 256.0);
  EXPECT_EQ(error_with("[reference]", "[cost]\nflops = \"n\"\n[reference]").substr(0, 24),
            "missing required field @");
}

}  // namespace
}  // namespace kopt
