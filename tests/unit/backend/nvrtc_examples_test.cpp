// NVRTC needs no GPU: every example kernel compiles for sm_80 and sm_90 at its default point
// and at every value of every parameter (one at a time), and a broken kernel's log points
// at the user's file and line.
#include <gtest/gtest.h>

#include <fstream>

#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

// A macro, not a function: GTEST_SKIP() returns from the function it is written in.
#define KOPT_SKIP_WITHOUT_NVRTC()                                         \
  if (auto kopt_toolkit = cuda::NvrtcCompiler().toolkit(); !kopt_toolkit) \
  GTEST_SKIP() << "NVRTC is not available: " << kopt_toolkit.error().message

Build compile(const Problem& p, const KernelSpec& k, const ParamPoint& point,
              const std::string& arch, const fs::path& out) {
  cuda::NvrtcCompiler c;
  CompileRequest req;
  req.source_path = p.dir / k.source;
  req.source_text = *read_text_file(p.dir / k.source);
  req.entry = k.entry;
  for (const auto& [n, v] : point) req.defines.emplace_back(n, std::to_string(v));
  req.include_dirs = {p.dir};
  req.arch = arch;
  auto b = c.compile(req, out);
  EXPECT_TRUE(b) << b.error().to_string();
  return b ? *b : Build{};
}

// Compiles one source in memory; Build.ok false is a compile error, an Error a missing NVRTC.
Expected<Build> compile_text(const std::string& name, const std::string& text,
                             const std::string& entry,
                             std::vector<std::pair<std::string, std::string>> defines = {}) {
  TempDir tmp("kopt-nvrtc-test");
  CompileRequest req;
  req.source_path = name;
  req.source_text = text;
  req.entry = entry;
  req.defines = std::move(defines);
  return cuda::NvrtcCompiler().compile(req, tmp.path() / "k.cubin");
}

class ExampleKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleKernels, CompileAtEveryParameterValue) {
  KOPT_SKIP_WITHOUT_NVRTC();
  TempDir tmp("kopt-nvrtc-test");
  auto p = load_problem(test::source_dir() / "examples" / GetParam());
  ASSERT_TRUE(p) << p.error().to_string();
  std::vector<const KernelSpec*> kernels;
  for (const auto& k : p->kernels) kernels.push_back(&k);
  if (p->reference.kind == ReferenceKind::cuda) kernels.push_back(&p->reference.kernel);
  int n = 0;
  for (const KernelSpec* k : kernels) {
    auto def = default_point(*p, *k);
    ASSERT_TRUE(def);
    std::vector<ParamPoint> points = {*def};
    for (const auto& param : k->params)
      for (auto v : param.values) {
        ParamPoint pt = *def;
        pt[param.name] = v;
        if (auto bad = violated_constraint(*k, p->dim_scope(), pt); bad && !*bad)
          points.push_back(pt);
      }
    for (const auto& pt : points)
      for (const char* arch : {"sm_80", "sm_90"}) {
        Build b = compile(*p, *k, pt, arch, tmp.path() / (std::to_string(n++) + ".cubin"));
        EXPECT_TRUE(b.ok) << k->name << " [" << point_to_string(pt) << "] " << arch << ":\n"
                          << b.log;
        EXPECT_GT(fs::file_size(b.cubin_path), 0u);
        EXPECT_GT(b.resources.registers, 0) << k->name << " " << arch << "\n" << b.log;
        EXPECT_EQ(b.resources.source, "cubin");
        // No local frame: nothing spills (the examples must not spill at these points).
        EXPECT_EQ(b.resources.local_bytes, 0)
            << k->name << " has a local frame at " << point_to_string(pt);
        EXPECT_EQ(b.resources.spill_store_bytes, 0)
            << k->name << " spills at " << point_to_string(pt);
        // Where NVRTC returned ptxas' report, it must agree with what the cubin says.
        ResourceUsage logged = parse_ptxas_info(b.log, b.lowered_entry);
        if (logged.registers >= 0) {
          EXPECT_EQ(logged.registers, b.resources.registers) << k->name;
          EXPECT_EQ(logged.local_bytes, b.resources.local_bytes) << k->name;
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleKernels,
                         ::testing::Values("vector_add", "softmax", "rmsnorm", "transpose",
                                           "reduction", "gemm_f32"));

TEST(NvrtcCompiler, ErrorsCarryTheUsersFileAndLine) {
  KOPT_SKIP_WITHOUT_NVRTC();
  auto b = compile_text("examples/broken/kernel.cu",
                        "extern \"C\" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n",
                        "k");
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_FALSE(b->ok);
  EXPECT_NE(b->log.find(
                "examples/broken/kernel.cu(2): error: identifier \"undefined_name\" is undefined"),
            std::string::npos)
      << b->log;
}

TEST(NvrtcCompiler, TemplateEntriesAreLowered) {
  KOPT_SKIP_WITHOUT_NVRTC();
  auto b =
      compile_text("t.cu",
                   "template <int B> __global__ void scale(float* x) { x[threadIdx.x] *= B; }\n"
                   "template __global__ void scale<VALUE>(float*);\n",
                   "scale<VALUE>", {{"VALUE", "4"}});
  ASSERT_TRUE(b && b->ok) << (b ? b->log : b.error().message);
  EXPECT_EQ(b->lowered_entry, "_Z5scaleILi4EEvPf");
}

TEST(NvrtcCompiler, MissingEntryIsACompileFailure) {
  KOPT_SKIP_WITHOUT_NVRTC();
  auto b = compile_text("k.cu", "extern \"C\" __global__ void k() {}\n", "not_there");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->ok);
  EXPECT_NE(b->log.find("not_there"), std::string::npos) << b->log;
}

}  // namespace
}  // namespace kopt
