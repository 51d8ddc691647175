// `kopt export`'s writers (problem/export.hpp) on the bundled examples and on small problems
// written here: what each format holds, that kopt reads an exported solve.cu back as the same
// problem, and every refusal naming its field. Whether the files build and run is the python
// test's (tests/python/export_test.cpp).
#include "kopt/problem/export.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "kopt/core/fs.hpp"
#include "kopt/problem/bare_files.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Exported {
  Problem problem;
  Export out;
  ExportSources sources;
};

Expected<Exported> export_of(const fs::path& dir, const std::string& kernel, ExportFormat format,
                             const std::map<std::string, std::int64_t>& sets = {},
                             const std::map<std::string, std::int64_t>& dims = {}) {
  auto p = load_problem(dir, dims);
  if (!p) return Unexpected(p.error());
  if (auto s = select_runnable(*p, {KernelLanguage::cuda, KernelLanguage::triton}); !s)
    return Unexpected(s.error());
  const KernelSpec* k = p->find_kernel(kernel);
  if (!k) return Unexpected(bad_input("no kernel " + kernel));
  auto point = resolve_point(*p, *k, sets);
  if (!point) return Unexpected(point.error());
  auto src = read_export_sources(*p, *k);
  if (!src) return Unexpected(src.error());
  auto out = export_kernel(*p, *k, *point, {format, ""}, *src);
  if (!out) return Unexpected(out.error());
  return Exported{*p, *out, *src};
}

const std::string& file(const Export& e, const std::string& name) {
  for (const auto& f : e.files)
    if (f.name == name) return f.text;
  ADD_FAILURE() << "no " << name;
  static const std::string none;
  return none;
}

fs::path example(const std::string& name) {
  return test::source_dir() / "examples" / name;
}

TEST(Export, AKernelBenchCudaKernelIsModelPyVerbatimAndAModelNewThatLaunchesIt) {
  auto e = export_of(example("kernelbench/19_ReLU"), "vec", ExportFormat::model_new,
                     {{"BLOCK", 128}, {"VEC", 4}});
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->out.language, "cuda");
  ASSERT_EQ(e->out.files.size(), 1u);
  const std::string& py = e->out.files[0].text;
  auto model = read_text_file(example("kernelbench/19_ReLU/model.py"));
  ASSERT_TRUE(model);
  EXPECT_TRUE(has(py, *model)) << "model.py verbatim";
  EXPECT_TRUE(has(py, "class ModelNew(Model):"));
  EXPECT_TRUE(has(py,
                  "_KOPT_FORWARD = [  # Model.forward's arguments: kopt tensors, or "
                  "constants\n    (\"tensor\", \"x\"),\n]"));
  EXPECT_TRUE(has(py, "_KOPT_OUTPUTS = [\"out\"]"));
  EXPECT_TRUE(has(py, "\"batch_size\": (\"x\", 0),"));
  // The CUDA: torch's headers before the point's #defines, the kernel, the launch from
  // kopt.toml's expressions, the #defines undone before the binding.
  std::size_t torch = py.find("#include <torch/extension.h>");
  std::size_t define = py.find("#ifndef BLOCK\n#define BLOCK 128\n#endif");
  std::size_t kernel = py.find("extern \"C\" __global__ void relu(");
  std::size_t undef = py.find("#undef BLOCK");
  std::size_t binding = py.find("TORCH_CHECK(x.is_cuda()");
  ASSERT_NE(define, std::string::npos);
  EXPECT_LT(torch, define);
  EXPECT_LT(define, kernel);
  EXPECT_LT(kernel, undef);
  EXPECT_LT(undef, binding);
  EXPECT_TRUE(has(py, "if (!(batch_size * dim % int64_t(VEC) == 0)) return"));
  EXPECT_TRUE(has(py,
                  "const int64_t kopt_grid[3] = {kopt_ceil_div(batch_size * dim, "
                  "int64_t(BLOCK) * int64_t(VEC)), 1, 1};"));
  EXPECT_TRUE(has(py, "const int64_t kopt_block[3] = {int64_t(BLOCK), 1, 1};"));
  EXPECT_TRUE(has(py, "relu<<<"));
  EXPECT_TRUE(has(py, "(const float*)x, (float*)out, (int)kopt_arg2);"))
      << "each argument as the kernel declares it";
  EXPECT_TRUE(has(py, "const int64_t batch_size = x.size(0);"));
  EXPECT_TRUE(has(py, "TORCH_CHECK(x.dim() == 2"));
  EXPECT_TRUE(has(py, "torch::Tensor out = torch::empty({batch_size, dim}"));
  EXPECT_TRUE(e->out.fixed_dims.empty());
  EXPECT_TRUE(has(py, "\"-U__CUDA_NO_HALF_OPERATORS__\"")) << "NVRTC's half operators, as kopt's";
}

TEST(Export, ATritonKernelIsEmbeddedAndCalledWithThePoint) {
  auto e = export_of(example("kernelbench/19_ReLU"), "triton", ExportFormat::model_new,
                     {{"BLOCK", 2048}});
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->out.language, "triton");
  const std::string& py = e->out.files[0].text;
  auto kernel = read_text_file(example("kernelbench/19_ReLU/kernel_triton.py"));
  ASSERT_TRUE(kernel);
  EXPECT_TRUE(has(py, "_KOPT_TRITON = r\"\"\"" + *kernel + "\"\"\""));
  EXPECT_TRUE(has(py, "_KOPT_PARAMS = {\"BLOCK\": 2048}"));
  EXPECT_TRUE(has(py, "result = module.run_kernel(**kwargs)"));
  EXPECT_FALSE(has(py, "_KOPT_KERNEL_CUDA")) << "nothing to build";
}

TEST(Export, SolveCuIsReadBackAsTheSameProblem) {
  auto e = export_of(example("kernelbench/19_ReLU"), "vec", ExportFormat::solve,
                     {{"BLOCK", 512}, {"VEC", 1}});
  ASSERT_TRUE(e) << e.error().to_string();
  const std::string& cu = file(e->out, "solve.cu");
  EXPECT_TRUE(has(cu, "// kopt: x[batch_size, dim] out[batch_size, dim]\n"));
  EXPECT_TRUE(has(cu,
                  "extern \"C\" void solve(const float* x, float* out, int batch_size, int "
                  "dim) {"));
  EXPECT_EQ(e->out.dims_flag, "--dims batch_size=4096,dim=8192");
  EXPECT_TRUE(has(file(e->out, "README.md"),
                  "kopt check solve.cu --ref ref.py --dims batch_size=4096,dim=8192"));
  // What `kopt check solve.cu --ref ref.py --dims ...` reads from it.
  TempDir dir("kopt-export-test");
  ASSERT_TRUE(write_text_atomic(dir.path() / "solve.cu", cu));
  auto bare = read_bare_kernel(dir.path() / "solve.cu");
  ASSERT_TRUE(bare) << bare.error().to_string();
  EXPECT_EQ(bare->kind, BareKind::solve);
  ASSERT_EQ(bare->entries.size(), 1u);
  const auto& params = bare->entries[0].params;
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(params[0].pointer && params[0].is_const);
  EXPECT_TRUE(params[1].pointer && !params[1].is_const);
  EXPECT_EQ(params[3].name, "dim");
  EXPECT_EQ(bare->notes.shapes.at("out"), (std::vector<std::string>{"batch_size", "dim"}));
  // The point's defaults, once each: kernel.cu's own `#ifndef VEC` default comes after.
  EXPECT_EQ(bare->tunables,
            (std::vector<std::pair<std::string, std::int64_t>>{{"BLOCK", 512}, {"VEC", 1}}));
  // ref.py wraps the problem's, which loads model.py beside it; KernelBench's tolerance.
  const std::string& ref = file(e->out, "ref.py");
  EXPECT_TRUE(has(ref, "atol = 0.01\nrtol = 0.01\n"));
  EXPECT_TRUE(has(ref, "def reference(**kwargs):\n    _ref.reference(**kwargs)"));
  EXPECT_EQ(file(e->out, "problem_ref.py"), e->sources.reference);
  EXPECT_EQ(file(e->out, "model.py"), *e->sources.model_py);
}

TEST(Export, ASolveKernelKeepsItsSourceUnderThePointsDefaults) {
  auto e =
      export_of(example("kernelbench/19_ReLU"), "solve", ExportFormat::solve, {{"THREADS", 512}});
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->out.language, "solve");
  const std::string& cu = file(e->out, "solve.cu");
  auto source = read_text_file(example("kernelbench/19_ReLU/solve.cu"));
  ASSERT_TRUE(source);
  EXPECT_TRUE(has(cu, "#ifndef THREADS\n#define THREADS 512\n#endif\n\n" + *source));
  auto model_new = export_of(example("kernelbench/19_ReLU"), "solve", ExportFormat::model_new);
  ASSERT_TRUE(model_new) << model_new.error().to_string();
  EXPECT_TRUE(has(model_new->out.files[0].text,
                  "solve((const float*)x, (float*)out, (int)kopt_arg2, (int)kopt_arg3);"));
}

TEST(Export, AProblemWithACudaReferenceGetsAModelThatRunsIt) {
  auto e = export_of(example("gemm_f32"), "register_tiled", ExportFormat::model_new);
  ASSERT_TRUE(e) << e.error().to_string();
  const std::string& py = e->out.files[0].text;
  EXPECT_TRUE(has(py, "class Model(nn.Module):"));
  EXPECT_TRUE(has(py, "results = _kopt_reference()(*[tensors[n] for n in _KOPT_READS])"));
  EXPECT_TRUE(has(py, "gemm_ref<<<"));
  EXPECT_TRUE(has(py, "gemm_regtile<<<"));
  EXPECT_TRUE(
      has(py, "(torch.rand([1024, 1024], dtype=torch.float32) * (1.0 - -1.0) + -1.0),  # A"));
  // (BM / TM) * (BN / TN): the parentheses the tree needs, no more.
  EXPECT_TRUE(has(py,
                  "const int64_t kopt_block[3] = {int64_t(BM) / int64_t(TM) * (int64_t(BN) / "
                  "int64_t(TN)), 1, 1};"));
  EXPECT_TRUE(has(py, "const int64_t kopt_block[3] = {16, 16, 1};")) << "the reference's launch";
  auto solve = export_of(example("gemm_f32"), "naive", ExportFormat::solve);
  ASSERT_TRUE(solve) << solve.error().to_string();
  const std::string& ref = file(solve->out, "ref.py");
  EXPECT_TRUE(has(ref, "atol = 0.0001\nrtol = 0.0001\n")) << "the problem's [tolerance]";
  EXPECT_TRUE(has(ref, "load_inline("));
  EXPECT_TRUE(has(ref, "gemm_ref<<<"));
}

TEST(Export, APythonReferenceProblemGetsItsRefPyAsModel) {
  auto e = export_of(example("gelu"), "cuda", ExportFormat::model_new, {}, {{"n", 4096}});
  ASSERT_TRUE(e) << e.error().to_string();
  const std::string& py = e->out.files[0].text;
  auto ref = read_text_file(example("gelu/ref.py"));
  ASSERT_TRUE(ref);
  EXPECT_TRUE(has(py, "_KOPT_REFERENCE_PY = r\"\"\"" + *ref + "\"\"\""));
  EXPECT_TRUE(has(py, "(torch.randn([4096], dtype=torch.float32) * 1.0 + 0.0),  # x"));
  auto solve = export_of(example("gelu"), "cuda", ExportFormat::solve);
  ASSERT_TRUE(solve) << solve.error().to_string();
  EXPECT_TRUE(has(file(solve->out, "ref.py"), "atol = 1e-05\nrtol = 1e-05\n"))
      << "ref.py's own tolerance";
}

// A problem written here: kopt.toml and its files.
class ExportSpec : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(write_text_atomic(m_dir.path() / name, text));
  }
  Expected<Exported> run(const std::string& toml, const std::string& kernel, ExportFormat f) {
    write("kopt.toml", toml);
    return export_of(m_dir.path(), kernel, f);
  }
  TempDir m_dir{"kopt-export-spec"};
};

const char* k_head = R"TOML(name = "scale"
[dims]
n = 64
k = 4
[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "input"
[[tensors]]
name = "y"
dtype = "f32"
shape = ["n", "k"]
role = "output"
[reference]
kind = "python"
source = "ref.py"
)TOML";

TEST_F(ExportSpec, ADimNoInputGivesIsFixedAndLocalHeadersAreInlinedOnce) {
  write("ref.py", "def reference(x, y, n, k):\n    y.copy_(x[:, None].expand(n, k))\n");
  write("common.cuh", "#pragma once\n__device__ float twice(float v) { return 2 * v; }\n");
  write("k.cu",
        "#include \"common.cuh\"\n#include \"common.cuh\"\n#include <cuda_fp16.h>\n"
        "__global__ void spread(const float* x, float* y, int n, int k) {}\n");
  auto e = run(std::string(k_head) + R"TOML([[kernels]]
name = "spread"
source = "k.cu"
entry = "spread"
args = ["x", "y", "n", "k"]
grid = ["ceil_div(n, 128)"]
block = [128]
)TOML",
               "spread", ExportFormat::model_new);
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->out.fixed_dims, std::vector<std::string>{"k=4"});
  const std::string& py = e->out.files[0].text;
  EXPECT_TRUE(has(py, "const int64_t k = 4;  // no input's extent: fixed by kopt export"));
  EXPECT_TRUE(has(py, "    \"k\": 4,\n"));
  EXPECT_TRUE(has(py, "// ---- common.cuh, inlined by kopt export ----\n__device__ float twice"));
  EXPECT_TRUE(has(py, "// (common.cuh is inlined above)"));
  EXPECT_TRUE(has(py, "#include <cuda_fp16.h>"));
  EXPECT_FALSE(has(py, "#pragma once"));
}

TEST_F(ExportSpec, WhatAFormatCannotCarryIsRefusedNamingTheField) {
  write("ref.py", "def reference(**kw):\n    pass\n");
  write("k.cl", "__kernel void spread(__global const float* x, __global float* y) {}\n");
  write("k.py", "def run_kernel(**kw):\n    pass\n");
  write("k.cu", "#define n 64\n__global__ void spread(const float* x, float* y) {}\n");
  auto cl = run(std::string(k_head) + R"TOML([[kernels]]
name = "cl"
source = "k.cl"
entry = "spread"
args = ["x", "y"]
grid = [1]
block = [1]
)TOML",
                "cl", ExportFormat::model_new);
  ASSERT_FALSE(cl);
  EXPECT_NE(cl.error().message.find("no kernel"), std::string::npos)
      << "select_runnable leaves an OpenCL-only kernel out: " << cl.error().to_string();
  auto p = load_problem(m_dir.path());
  ASSERT_TRUE(p) << p.error().to_string();
  auto opencl = export_kernel(*p, p->kernels[0], {}, {ExportFormat::model_new, ""}, {});
  ASSERT_FALSE(opencl);
  EXPECT_EQ(opencl.error().field, "kernels[0].source");
  EXPECT_NE(opencl.error().message.find("OpenCL"), std::string::npos);

  auto triton = run(std::string(k_head) +
                        "[[kernels]]\nname = \"t\"\nsource = \"k.py\"\nentry = \"run_kernel\"\n",
                    "t", ExportFormat::solve);
  ASSERT_FALSE(triton);
  EXPECT_EQ(triton.error().field, "kernels[0].source");

  auto macro = run(std::string(k_head) + R"TOML([[kernels]]
name = "m"
source = "k.cu"
entry = "spread"
args = ["x", "y"]
grid = [1]
block = [1]
)TOML",
                   "m", ExportFormat::solve);
  ASSERT_FALSE(macro);
  EXPECT_EQ(macro.error().field, "n");
  EXPECT_NE(macro.error().message.find("#defines n"), std::string::npos);
}

TEST_F(ExportSpec, AnInoutTensorAndACppReferenceHaveNoSolveForm) {
  write("ref.py", "def reference(**kw):\n    pass\n");
  write("k.cu", "__global__ void acc(const float* x, float* a, int n) {}\n");
  std::string toml = std::string(k_head) + R"TOML([[tensors]]
name = "a"
dtype = "f32"
shape = ["n"]
role = "inout"
[[kernels]]
name = "acc"
source = "k.cu"
entry = "acc"
args = ["x", "a", "n"]
grid = ["ceil_div(n, 64)"]
block = [64]
)TOML";
  auto inout = run(toml, "acc", ExportFormat::solve);
  ASSERT_FALSE(inout);
  EXPECT_EQ(inout.error().field, "tensors[2]");
  EXPECT_NE(inout.error().message.find("inout"), std::string::npos);
  auto as_model = run(toml, "acc", ExportFormat::model_new);
  ASSERT_TRUE(as_model) << as_model.error().to_string();
  EXPECT_TRUE(has(as_model->out.files[0].text, "torch::Tensor kopt_a = a.clone();"));
  EXPECT_TRUE(has(as_model->out.files[0].text, "(float*)kopt_a.data_ptr()"));

  auto softmax = export_of(example("softmax"), "tuned", ExportFormat::model_new);
  ASSERT_FALSE(softmax);
  EXPECT_EQ(softmax.error().field, "reference.kind");
}

TEST_F(ExportSpec, ArgumentsThatDoNotMatchTheKernelOrATensorMapAreRefused) {
  write("ref.py", "def reference(**kw):\n    pass\n");
  write("k.cu", "__global__ void spread(const float* x, float* y, int n) {}\n");
  auto count = run(std::string(k_head) + R"TOML([[kernels]]
name = "s"
source = "k.cu"
entry = "spread"
args = ["x", "y"]
grid = [1]
block = [1]
)TOML",
                   "s", ExportFormat::model_new);
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().field, "kernels[0].args");
  EXPECT_NE(count.error().message.find("kopt.toml gives 2 arguments; spread takes 3"),
            std::string::npos);
  auto matching = run(std::string(k_head) + R"TOML([[kernels]]
name = "s"
source = "k.cu"
entry = "spread"
args = ["x", "y", "n"]
grid = [1]
block = [1]
)TOML",
                      "s", ExportFormat::model_new);
  ASSERT_TRUE(matching) << matching.error().to_string();
  auto tma = export_of(example("gemm_bf16"), "wgmma", ExportFormat::solve);
  ASSERT_FALSE(tma);
  EXPECT_NE(tma.error().field.find(".args[0]"), std::string::npos) << tma.error().to_string();
  EXPECT_NE(tma.error().message.find("tensor map"), std::string::npos);
}

}  // namespace
}  // namespace kopt
