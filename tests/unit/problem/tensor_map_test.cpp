// Tensor maps as kernel arguments: the loader reads { tensor_map, box, swizzle } and refuses
// each bad one with file:line and field; resolve_args evaluates the box at a point and
// refuses what TMA cannot take; backends that cannot pass one say so.
#include "kopt/problem/tensor_map.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/backend/cpu_reference.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
namespace {

const char* k_spec = R"TOML(name = "tma"

[dims]
M = 256
K = 128

[[tensors]]
name = "A"
dtype = "bf16"
shape = ["M", "K"]
role = "input"

[[tensors]]
name = "C"
dtype = "f32"
shape = ["M", "K"]
role = "output"

[reference]
kind = "cpp"
source = "ref.cpp"
entry = "ref"
args = ["A", "C"]

[[kernels]]
name = "wgmma"
source = "kernel.cu"
entry = "k"
arch = "sm_90a"
args = [{ tensor_map = "A", box = ["BM", "BK"], swizzle = 128 }, "C", "M", "K"]
grid = ["ceil_div(M, BM)"]
block = [128]

[kernels.params]
BM = [64, 128, 512]
BK = [64, 32, 8, 3]
)TOML";

class TensorMapSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"kernel.cu", "kernel.cl", "kernel.py", "ref.cpp"})
      std::ofstream(m_dir.path() / f) << "//\n";
  }
  Expected<Problem> parse(const std::string& text) {
    return parse_problem(text, m_dir.path() / "kopt.toml");
  }
  std::string without_dir(std::string msg) const {
    std::string dir = m_dir.path().string() + "/";
    for (auto pos = msg.find(dir); pos != std::string::npos; pos = msg.find(dir))
      msg.erase(pos, dir.size());
    return msg;
  }
  // The load error of the spec with `from` replaced by `to`, without the temp dir.
  std::string error_after(const std::string& from, const std::string& to) {
    std::string text = k_spec;
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    auto p = parse(text);
    if (p) return "parsed";
    EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
    return without_dir(p.error().to_string());
  }
  // The error of resolving the kernel's args at `point`.
  std::string resolve_error(const std::string& text, const ParamPoint& point) {
    auto p = parse(text);
    if (!p) return "load: " + p.error().to_string();
    auto args = resolve_args(*p, p->kernels[0], point);
    if (args) return "resolved";
    EXPECT_EQ(args.error().kind, ErrorKind::bad_input);
    return without_dir(args.error().to_string());
  }
  TempDir m_dir{"kopt-tensor-map-test"};
};

TEST_F(TensorMapSpec, ReadsTheTableAndResolvesTheBoxAtAPoint) {
  auto p = parse(k_spec);
  ASSERT_TRUE(p) << p.error().to_string();
  const KernelSpec& k = p->kernels[0];
  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[0].tensor, "A");
  ASSERT_TRUE(k.args[0].tensor_map);
  ASSERT_EQ(k.args[0].tensor_map->box.size(), 2u);
  EXPECT_EQ(k.args[0].tensor_map->box[0].text(), "BM");
  EXPECT_EQ(k.args[0].tensor_map->swizzle, 128);
  EXPECT_EQ(k.args[0].where.line, 30);
  EXPECT_EQ(k.args[1].tensor, "C");
  EXPECT_FALSE(k.args[1].tensor_map);

  auto args = resolve_args(*p, k, {{"BM", 128}, {"BK", 64}});
  ASSERT_TRUE(args) << args.error().to_string();
  const ResolvedArg& a = (*args)[0];
  EXPECT_EQ(a.tensor, "A");
  EXPECT_EQ(a.dtype, DType::bf16);
  ASSERT_TRUE(a.tensor_map);
  EXPECT_EQ(a.tensor_map->box, (std::vector<std::int64_t>{128, 64}));
  EXPECT_EQ(a.tensor_map->swizzle, 128);
  EXPECT_FALSE((*args)[1].tensor_map);
  EXPECT_EQ(std::get<std::int64_t>((*args)[2].value), 256);

  // The swizzle defaults to 0; a box may hold numbers.
  std::string plain = k_spec;
  plain.replace(plain.find("swizzle = 128"), 13, "box2 = 1");
  EXPECT_EQ(without_dir(parse(plain).error().to_string()),
            "kopt.toml:30: kernels[0].args[0].box2: unknown field (did you mean 'box'?)");
  plain = k_spec;
  plain.replace(plain.find("box = [\"BM\", \"BK\"], swizzle = 128"), 33, "box = [64, \"BK\"]");
  auto q = parse(plain);
  ASSERT_TRUE(q) << q.error().to_string();
  auto b = resolve_args(*q, q->kernels[0], {{"BM", 64}, {"BK", 8}});
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_EQ((*b)[0].tensor_map->box, (std::vector<std::int64_t>{64, 8}));
  EXPECT_EQ((*b)[0].tensor_map->swizzle, 0);
}

TEST_F(TensorMapSpec, BadTablesNameFileLineAndField) {
  EXPECT_EQ(error_after("tensor_map = \"A\"", "tensor_map = \"Z\""),
            "kopt.toml:30: kernels[0].args[0].tensor_map: unknown tensor 'Z'");
  EXPECT_EQ(error_after("box = [\"BM\", \"BK\"]", "box = [\"BM\", \"BK\", 1]"),
            "kopt.toml:30: kernels[0].args[0].box: expected 2 extents, one per dim of tensor 'A' "
            "(outermost "
            "first, as its shape)");
  EXPECT_EQ(error_after("box = [\"BM\", \"BK\"], ", ""),
            "kopt.toml:30: kernels[0].args[0].box: missing required field");
  EXPECT_EQ(error_after("box = [\"BM\", \"BK\"]", "box = [\"BM\", \"BN\"]"),
            "kopt.toml:30: kernels[0].args[0].box[1]: unknown name 'BN' in expression 'BN' (known "
            "dims and params: "
            "BK, BM, K, M)");
  EXPECT_EQ(error_after("swizzle = 128", "swizzle = 16"),
            "kopt.toml:30: kernels[0].args[0].swizzle: expected 0, 32, 64 or 128 (bytes), got 16");
  EXPECT_EQ(error_after("swizzle = 128", "swizzle = \"128B\""),
            "kopt.toml:30: kernels[0].args[0].swizzle: expected an integer");
  EXPECT_EQ(error_after("swizzle = 128", "swizzle = 128, l2 = 256"),
            "kopt.toml:30: kernels[0].args[0].l2: unknown field");
  EXPECT_EQ(error_after("shape = [\"M\", \"K\"]", "shape = [\"M\", \"K\", 1, 1, 1, 1]"),
            "kopt.toml:30: kernels[0].args[0].tensor_map: a tensor map has 1 to 5 dims; tensor 'A' "
            "has 6");
  EXPECT_EQ(error_after("{ tensor_map", "{ expr_ = 1, tensor_map"),
            "kopt.toml:30: kernels[0].args[0].expr_: unknown field");
}

TEST_F(TensorMapSpec, OnlyCudaKernelsTakeTensorMaps) {
  std::string no_arch = k_spec;
  no_arch.erase(no_arch.find("arch = \"sm_90a\"\n"), 16);
  auto opencl = no_arch;
  opencl.replace(opencl.find("source = \"kernel.cu\""), 20, "source = \"kernel.cl\"");
  auto p = parse(opencl);
  ASSERT_FALSE(p);
  EXPECT_EQ(without_dir(p.error().to_string()),
            "kopt.toml:29: kernels[0].args[0].tensor_map: a tensor map is passed only to CUDA "
            "kernels: kernel "
            "'wgmma' has a source in OpenCL (kernel.cl)");
  // A port in another language would have to take it too.
  EXPECT_EQ(error_after("source = \"kernel.cu\"", "source = [\"kernel.cu\", \"kernel.py\"]"),
            "kopt.toml:30: kernels[0].args[0].tensor_map: a tensor map is passed only to CUDA "
            "kernels: kernel "
            "'wgmma' has a source in Triton (kernel.py)");
  EXPECT_EQ(
      error_after("args = [\"A\", \"C\"]", "args = [{ tensor_map = \"A\", box = [8, 8] }, \"C\"]"),
      "kopt.toml:23: reference.args[0].tensor_map: a tensor map is passed only to CUDA kernels: "
      "the "
      "reference is of kind \"cpp\"");
}

TEST_F(TensorMapSpec, BoxesTmaCannotTakeAreRefusedAtThePoint) {
  EXPECT_EQ(resolve_error(k_spec, {{"BM", 64}, {"BK", 3}}),
            "kopt.toml:30: kernels[0].args[0].box: the innermost box extent 3 x 2 bytes (bf16) = 6 "
            "bytes at BK=3 "
            "BM=64 is not a multiple of 16 bytes");
  EXPECT_EQ(
      resolve_error(k_spec, {{"BM", 512}, {"BK", 64}}),
      "kopt.toml:30: kernels[0].args[0].box: box[0] = 512 at BK=64 BM=512 is outside [1, 256]");
  std::string small_swizzle = k_spec;
  small_swizzle.replace(small_swizzle.find("swizzle = 128"), 13, "swizzle = 32");
  EXPECT_EQ(resolve_error(small_swizzle, {{"BM", 64}, {"BK", 32}}),
            "kopt.toml:30: kernels[0].args[0].box: the innermost box extent 32 x 2 bytes (bf16) = "
            "64 bytes at "
            "BK=32 BM=64 exceeds the 32-byte swizzle span (a box row must fit in it)");
  EXPECT_EQ(resolve_error(small_swizzle, {{"BM", 64}, {"BK", 8}}),
            "resolved");  // 16 bytes fit in 32
  std::string zero = k_spec;
  zero.replace(zero.find("box = [\"BM\", \"BK\"]"), 18, "box = [\"BM - 64\", \"BK\"]");
  EXPECT_EQ(resolve_error(zero, {{"BM", 64}, {"BK", 8}}),
            "kopt.toml:30: kernels[0].args[0].box: box[0] = 0 at BK=8 BM=64 is outside [1, 256]");
}

TEST(TensorMapLayout, TheDriversOrderIsInnermostFirstWithByteStrides) {
  // The tma_copy fixture: bf16 [rows, cols] = [1000, 776], box [BR, BC] = [32, 64].
  auto l = tensor_map_layout({1000, 776}, DType::bf16, ResolvedTensorMap{{32, 64}, 0});
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->dims, (std::vector<std::uint64_t>{776, 1000}));
  EXPECT_EQ(l->strides, (std::vector<std::uint64_t>{1552}));
  EXPECT_EQ(l->box, (std::vector<std::uint32_t>{64, 32}));
  auto three = tensor_map_layout({3, 5, 8}, DType::f32, ResolvedTensorMap{{1, 4, 8}, 0});
  ASSERT_TRUE(three) << three.error().message;
  EXPECT_EQ(three->dims, (std::vector<std::uint64_t>{8, 5, 3}));
  EXPECT_EQ(three->strides, (std::vector<std::uint64_t>{32, 160}));
  EXPECT_EQ(three->box, (std::vector<std::uint32_t>{8, 4, 1}));
  auto one = tensor_map_layout({100}, DType::f32, ResolvedTensorMap{{16}, 0});
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->strides.empty());

  auto unaligned = tensor_map_layout({1000, 772}, DType::bf16, ResolvedTensorMap{{32, 64}, 0});
  ASSERT_FALSE(unaligned);
  EXPECT_EQ(unaligned.error().message,
            "a step along dim 0 is 1544 bytes, which TMA needs to be a multiple of 16 (and below "
            "2^40); the inner "
            "extents at this shape do not make 16-byte rows");
  EXPECT_FALSE(tensor_map_layout({1000, 776}, DType::bf16, ResolvedTensorMap{{64}, 0}));
  EXPECT_FALSE(tensor_map_layout({}, DType::bf16, ResolvedTensorMap{{}, 0}));
}

TEST(TensorMapRefusal, BackendsThatCannotPassOneSaySo) {
  std::vector<ResolvedArg> args = {
      ResolvedArg{"x", DType::f32, std::int64_t{0}},
      ResolvedArg{"a", DType::bf16, std::int64_t{0}, ResolvedTensorMap{{64, 64}, 128}}};
  EXPECT_EQ(tensor_map_refusal(args, "the OpenCL backend"),
            "argument 1 is a tensor map of 'a' (tensor_map), which only a CUDA kernel takes; the "
            "OpenCL backend "
            "cannot pass one");
  args.pop_back();
  EXPECT_EQ(tensor_map_refusal(args, "the OpenCL backend"), "");

  RunJob job;
  job.kind = ModuleKind::cpu_library;
  job.module_path = "/no/such/reference.so";
  job.entry = "ref";
  job.args = {ResolvedArg{"a", DType::bf16, std::int64_t{0}, ResolvedTensorMap{{64, 64}, 0}}};
  RunResult r = run_cpu_reference(job);
  EXPECT_EQ(r.status, RunStatus::launch_failed);
  EXPECT_NE(r.error.find("a C++ reference cannot pass one"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace kopt
