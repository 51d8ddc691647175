// Spec parsing: a valid spec, and many bad ones with their exact messages (file:line: field: why).
#include "kopt/problem/loader.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

const char* k_valid = R"TOML(name = "demo"
family = "elementwise"

[dims]
n = 1024
m = 8

[[tensors]]
name = "x"
dtype = "f32"
shape = ["n", "m"]
role = "input"
init = { kind = "uniform", low = -1.0, high = 1.0 }

[[tensors]]
name = "y"
dtype = "f16"
shape = ["n * m"]
role = "output"

[cost]
flops = "n * m"
bytes = "n * m * 6"

[tolerance]
f16 = { atol = 1e-2 }

[reference]
kind = "cuda"
source = "ref.cu"
entry = "ref"
args = ["x", "y", "n * m"]
grid = ["ceil_div(n * m, 256)"]
block = [256]

[[kernels]]
name = "k"
source = "kernel.cu"
entry = "kern"
args = ["x", "y", { expr = "n * m", dtype = "i64" }]
grid = ["ceil_div(n * m, BLOCK * VEC)"]
block = ["BLOCK"]
constraints = ["(n * m) % VEC == 0", "BLOCK * VEC <= 2048"]

[kernels.params]
BLOCK = [256, 128, 1024]
VEC = { values = [1, 2, 4], default = 4 }
FAST = [true, false]
)TOML";

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(m_dir.path() / "kernel.cu") << "// kernel\n";
    std::ofstream(m_dir.path() / "ref.cu") << "// ref\n";
  }
  Expected<Problem> parse(const std::string& text,
                          const std::map<std::string, std::int64_t>& dims = {}) {
    return parse_problem(text, m_dir.path() / "kopt.toml", dims);
  }
  // The error for the valid spec with `from` replaced by `to`, with the temp dir cut off.
  std::string error_after(const std::string& from, const std::string& to) {
    std::string text = k_valid;
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    auto p = parse(text);
    if (p) return "parsed";
    std::string msg = p.error().to_string();
    std::string dir = m_dir.path().string() + "/";
    for (auto pos = msg.find(dir); pos != std::string::npos; pos = msg.find(dir))
      msg.erase(pos, dir.size());
    EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
    return msg;
  }
  TempDir m_dir{"kopt-loader-test"};
};

TEST_F(LoaderTest, ParsesAValidSpec) {
  auto p = parse(k_valid);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->name, "demo");
  EXPECT_EQ(p->family, "elementwise");
  ASSERT_EQ(p->dims.size(), 2u);
  ASSERT_EQ(p->tensors.size(), 2u);
  EXPECT_EQ(p->tensors[1].dtype, DType::f16);
  EXPECT_EQ(p->tensors[0].init.kind, InitKind::uniform);
  EXPECT_EQ(p->tensors[0].init.a, -1.0);
  EXPECT_EQ(p->tolerance_for(p->tensors[1]).atol, 1e-2);
  EXPECT_EQ(p->tolerance_for(p->tensors[1]).rtol, default_tolerance(DType::f16).rtol);
  EXPECT_EQ(p->reference.kind, ReferenceKind::cuda);
  ASSERT_EQ(p->kernels.size(), 1u);
  const KernelSpec& k = p->kernels[0];
  EXPECT_EQ(k.args[2].scalar_dtype, DType::i64);
  EXPECT_EQ(k.args[0].tensor, "x");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.find_param("VEC")->default_value, 4);
  EXPECT_EQ(k.find_param("FAST")->values, (std::vector<std::int64_t>{1, 0}));
  auto point = default_point(*p, k);
  ASSERT_TRUE(point);
  EXPECT_EQ(point_to_string(*point), "BLOCK=256 FAST=1 VEC=4");
}

TEST_F(LoaderTest, ReadsADeclaredPrecisionAndRefusesAnUnknownOne) {
  auto p = parse(std::string("precision = \"tf32\"\n") + k_valid);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->precision, Precision::tf32);
  std::string text = k_valid;
  text.replace(text.find("block = [\"BLOCK\"]"), 17, "block = [\"BLOCK\"]\nprecision = \"bf16\"");
  auto k = parse(text);
  ASSERT_TRUE(k) << k.error().to_string();
  EXPECT_FALSE(k->precision);
  EXPECT_EQ(k->kernels[0].precision, Precision::bf16);
  EXPECT_EQ(
      error_after("family = \"elementwise\"", "family = \"elementwise\"\nprecision = \"half\""),
      "kopt.toml:3: precision: unknown precision 'half' (known: int8, fp8, f16, bf16, tf32, "
      "f32, f64): the lowest precision the kernels may multiply in");
}

TEST_F(LoaderTest, DimOverrides) {
  auto p = parse(k_valid, {{"n", 64}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->dim_scope().at("n"), Value(std::int64_t{64}));
  EXPECT_EQ(p->dim_scope().at("m"), Value(std::int64_t{8}));
  auto bad = parse(k_valid, {{"q", 64}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--dim q=64: no such dim"), std::string::npos);
}

TEST_F(LoaderTest, BadSpecsNameFileLineAndField) {
  EXPECT_EQ(error_after("n = 1024", "n = 1024 1024"),
            "kopt.toml:5: malformed TOML: Error while parsing key-value pair: expected a comment "
            "or whitespace, saw '1'");
  EXPECT_EQ(error_after("dtype = \"f16\"", "dtype = \"float16\""),
            "kopt.toml:17: tensors[1].dtype: unknown dtype 'float16' (known: f64, f32, f16, bf16, "
            "i64, i32, i16, i8, u8)");
  EXPECT_EQ(error_after("shape = [\"n\", \"m\"]", "shape = [\"n\", \"colls\"]"),
            "kopt.toml:11: tensors[0].shape[1]: unknown name 'colls' in expression 'colls' (known "
            "dims: m, n)");
  EXPECT_EQ(error_after("shape = [\"n\", \"m\"]", "shape = [\"n\", \"m - 8\"]"),
            "kopt.toml:11: tensors[0].shape[1]: extent must be > 0, got 0");
  EXPECT_EQ(error_after("source = \"kernel.cu\"", "source = \"missing.cu\""),
            "kopt.toml:38: kernels[0].source: file not found: missing.cu");
  EXPECT_EQ(error_after("role = \"output\"", "role = \"result\""),
            "kopt.toml:19: tensors[1].role: unknown role 'result' (known: input, output, inout)");
  EXPECT_EQ(error_after("kind = \"uniform\"", "kind = \"gaussian\""),
            "kopt.toml:13: tensors[0].init: unknown init kind 'gaussian' (known: normal, uniform, "
            "randint, arange, constant)");
  EXPECT_EQ(error_after("low = -1.0, high = 1.0", "low = 1.0, high = -1.0"),
            "kopt.toml:13: tensors[0].init: uniform needs low < high");
  EXPECT_EQ(error_after("shape = [\"n\", \"m\"]", "shpae = [\"n\", \"m\"]"),
            "kopt.toml:8: tensors[0].shape: missing required field (the table has 'shpae': did you "
            "mean 'shape'?)");
  EXPECT_EQ(error_after("role = \"input\"", "role = \"input\"\ncolor = \"red\""),
            "kopt.toml:13: tensors[0].color: unknown field");
  EXPECT_EQ(error_after("constraints = [\"(n * m) % VEC == 0\", \"BLOCK * VEC <= 2048\"]",
                        "constraints = [\"BLOCK > 4096\"]"),
            "kopt.toml:43: kernels[0].constraints: no point of the parameter space satisfies the "
            "constraints (18 points tried)");
  EXPECT_EQ(error_after("constraints = [\"(n * m) % VEC == 0\"",
                        "constraints = [\"(n * m) % VECTOR == 0\""),
            "kopt.toml:43: kernels[0].constraints[0]: unknown name 'VECTOR' in expression '(n * m) "
            "% VECTOR == 0' "
            "(known dims and params: BLOCK, FAST, VEC, m, n)");
  EXPECT_EQ(error_after("grid = [\"ceil_div(n * m, BLOCK * VEC)\"]",
                        "grid = [\"ceil_div(n * m, WARPS)\"]"),
            "kopt.toml:41: kernels[0].grid[0]: unknown name 'WARPS' in expression 'ceil_div(n * m, "
            "WARPS)' "
            "(known dims and params: BLOCK, FAST, VEC, m, n, sm_count)");
  EXPECT_EQ(error_after("VEC = { values = [1, 2, 4], default = 4 }",
                        "VEC = { values = [1, 2, 4], default = 3 }"),
            "kopt.toml:47: kernels[0].params.VEC.default: default 3 is not one of the values");
  EXPECT_EQ(error_after("BLOCK = [256, 128, 1024]", "BLOCK = [256, \"big\"]"),
            "kopt.toml:46: kernels[0].params.BLOCK[1]: expected an integer or a boolean");
  EXPECT_EQ(
      error_after("kind = \"cuda\"", "kind = \"fortran\""),
      "kopt.toml:29: reference.kind: unknown reference kind 'fortran' (known: cuda, cpp, python)");
  EXPECT_EQ(error_after("args = [\"x\", \"y\", \"n * m\"]", "args = [\"x\", \"z\", \"n * m\"]"),
            "kopt.toml:32: reference.args[1]: unknown name 'z' in expression 'z' (not a tensor; "
            "known dims and params: m, n)");
  EXPECT_EQ(error_after("{ expr = \"n * m\", dtype = \"i64\" }",
                        "{ expr = \"n * m\", dtype = \"long\" }"),
            "kopt.toml:40: kernels[0].args[2].dtype: unknown dtype 'long' (known: f64, f32, f16, "
            "bf16, i64, i32, i16, i8, u8)");
  EXPECT_EQ(error_after("name = \"y\"", "name = \"x\""),
            "kopt.toml:16: tensors[1].name: name 'x' is already used by a dim or another tensor");
  EXPECT_EQ(error_after("role = \"output\"", "role = \"input\""),
            "kopt.toml:8: tensors: no tensor has role output or inout: nothing to check");
  EXPECT_EQ(error_after("role = \"output\"", "role = \"output\"\ninit = \"normal\""),
            "kopt.toml:20: tensors[1].init: an output tensor is poisoned before each run, not "
            "initialized");
  EXPECT_EQ(error_after("n = 1024", "n = -4"), "kopt.toml:5: dims.n: must be > 0, got -4");
  EXPECT_EQ(error_after("f16 = { atol = 1e-2 }", "f16 = { atol = -1.0 }"),
            "kopt.toml:26: tolerance.f16: tolerances must be >= 0");
  EXPECT_EQ(error_after("flops = \"n * m\"", "flops = \"n * q\""),
            "kopt.toml:22: cost.flops: unknown name 'q' in expression 'n * q' (known dims: m, n)");
  EXPECT_EQ(error_after("name = \"demo\"\n", ""), "kopt.toml:1: name: missing required field");
}

TEST(LoadProblem, MissingDirectoryAndFile) {
  auto missing = load_problem("no/such/problem");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().to_string(), "no/such/problem: no such problem directory or file");
  TempDir empty("kopt-empty");
  auto no_spec = load_problem(empty.path());
  ASSERT_FALSE(no_spec);
  EXPECT_EQ(no_spec.error().message, "not a problem directory: kopt.toml not found");
  EXPECT_EQ(exit_code(no_spec.error().kind), 2);
}

TEST(LoadProblem, EveryExampleLoads) {
  for (const char* name :
       {"vector_add", "softmax", "rmsnorm", "transpose", "reduction", "gemm_f32"}) {
    auto p = load_problem(test::source_dir() / "examples" / name);
    ASSERT_TRUE(p) << name << ": " << p.error().to_string();
    EXPECT_GE(p->kernels.size(), 2u) << name;
    EXPECT_TRUE(p->cost) << name;
    for (const auto& k : p->kernels) EXPECT_TRUE(default_point(*p, k)) << name << "/" << k.name;
  }
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

class MethodToggles : public LoaderTest {};

TEST_F(MethodToggles, OnAndOffAreDeclaredParamValues) {
  std::string text =
      std::string(k_valid) +
      "\n[kernels.methods]\nvectorized_global_loads = { on = \"VEC=4\", off = \"VEC=1\" }\n"
      "fast_math_intrinsics = { on = \"FAST=1 BLOCK=128\", off = \"FAST=0\" }\n";
  auto p = parse(text);
  ASSERT_TRUE(p) << p.error().to_string();
  const MethodToggle* v = p->kernels[0].find_method("vectorized_global_loads");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->on, (std::map<std::string, std::int64_t>{{"VEC", 4}}));
  EXPECT_EQ(v->off, (std::map<std::string, std::int64_t>{{"VEC", 1}}));
  EXPECT_EQ(p->kernels[0].find_method("fast_math_intrinsics")->on.size(), 2u);
  EXPECT_EQ(p->kernels[0].find_method("tma"), nullptr);
}

TEST_F(MethodToggles, BadTogglesNameTheField) {
  std::string base = std::string(k_valid) + "\n[kernels.methods]\n";
  auto undeclared = parse(base + "vectorized_global_loads = { on = \"VEC=8\", off = \"VEC=1\" }\n");
  ASSERT_FALSE(undeclared);
  EXPECT_EQ(undeclared.error().field, "kernels[0].methods.vectorized_global_loads.on");
  EXPECT_NE(undeclared.error().message.find("not a declared value of VEC"), std::string::npos);
  auto unknown = parse(base + "vectorized_global_loads = { on = \"WIDTH=4\", off = \"VEC=1\" }\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("a param of this kernel"), std::string::npos);
  auto no_off = parse(base + "vectorized_global_loads = { on = \"VEC=4\" }\n");
  ASSERT_FALSE(no_off);
  EXPECT_EQ(no_off.error().kind, ErrorKind::bad_input);
}

}  // namespace
}  // namespace kopt
