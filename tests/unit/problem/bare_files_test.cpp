// Bare files in (problem/bare_files.hpp): what kopt reads from a kernel file, and the kopt.toml it
// infers from the Python probe's facts (given here as JSON, as python/kopt_init_probe.py writes
// them), loaded by the real loader. The probe itself runs in tests/python/bare_files_test.cpp.
#include "kopt/problem/bare_files.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const char* k_gemm_solve = R"(#include <cuda_runtime.h>
#ifndef TILE
#define TILE 32
#endif
extern "C" void solve(float* A, float* B, float* C, int M, int N, int K) {}
)";

class BareFiles : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = m_dir.path() / name;
    EXPECT_TRUE(write_text_atomic(p, text));
    return p;
  }
  BareRequest request(const std::string& kernel,
                      std::vector<std::pair<std::string, std::int64_t>> dims) {
    BareRequest r;
    r.kernels = {m_dir.path() / kernel};
    r.ref = m_dir.path() / "ref.py";
    r.dims = std::move(dims);
    r.out_dir = m_dir.path();
    return r;
  }
  // The inferred kopt.toml, written and loaded.
  Expected<Problem> load(const BareInference& b) {
    auto r = b.finish();
    if (!r) return Unexpected(r.error());
    EXPECT_TRUE(write_text_atomic(m_dir.path() / "kopt.toml", r->kopt_toml));
    m_toml = r->kopt_toml;
    m_guesses = r->guesses;
    return load_problem(m_dir.path());
  }
  void SetUp() override { write("ref.py", "def reference(**kwargs):\n    pass\n"); }
  TempDir m_dir{"kopt-bare"};
  std::string m_toml;
  std::vector<std::string> m_guesses;
};

TEST_F(BareFiles, ReadsEachKindOfKernelFile) {
  auto solve = read_bare_kernel(write("gemm.cu", k_gemm_solve));
  ASSERT_TRUE(solve) << solve.error().to_string();
  EXPECT_EQ(solve->kind, BareKind::solve);
  ASSERT_EQ(solve->entries.size(), 1u);
  EXPECT_EQ(solve->entries[0].params.size(), 6u);
  EXPECT_FALSE(solve->entries[0].params[0].is_const);  // the skills' template: nothing const
  ASSERT_EQ(solve->tunables.size(), 1u);
  EXPECT_EQ(solve->tunables[0], (std::pair<std::string, std::int64_t>{"TILE", 32}));

  auto cl = read_bare_kernel(write(
      "relu.cl",
      "__kernel void relu(__global const float* x, __global float* y, const int n) {}\n"
      "__kernel void relu2(__global const float* restrict x, __global float* y, int n) {}\n"));
  ASSERT_TRUE(cl) << cl.error().to_string();
  EXPECT_EQ(cl->kind, BareKind::kernels);
  ASSERT_EQ(cl->entries.size(), 2u);
  EXPECT_TRUE(cl->entries[0].params[0].is_const);
  EXPECT_FALSE(cl->entries[0].params[1].is_const);
  EXPECT_EQ(cl->entries[1].params[0].dtype, DType::f32);

  auto cu = read_bare_kernel(write("k.cu",
                                   "template <int B> __global__ void skipped(float* x) {}\n"
                                   "extern \"C\" __global__ void __launch_bounds__(256) "
                                   "scale(const float* x, float* y, int n) {}\n"));
  ASSERT_TRUE(cu) << cu.error().to_string();
  ASSERT_EQ(cu->entries.size(), 1u);
  EXPECT_EQ(cu->entries[0].entry, "scale");

  auto triton = read_bare_kernel(write("k.py", "def run_kernel(x, y, n, BLOCK=1024):\n    pass\n"));
  ASSERT_TRUE(triton);
  EXPECT_EQ(triton->kind, BareKind::triton);
  auto model_new = read_bare_kernel(write("new.py", "class ModelNew:\n    pass\n"));
  ASSERT_TRUE(model_new);
  EXPECT_EQ(model_new->kind, BareKind::model_new);

  auto neither = read_bare_kernel(write("x.py", "y = 1\n"));
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().message.find("run_kernel"), std::string::npos);
  auto text = read_bare_kernel(write("notes.txt", "hello"));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::bad_input);
  auto no_kernel = read_bare_kernel(write("empty.cu", "int f() { return 1; }\n"));
  ASSERT_FALSE(no_kernel);
  EXPECT_NE(no_kernel.error().message.find("no extern \"C\" void solve"), std::string::npos);
  auto bad_param =
      read_bare_kernel(write("pp.cu", "extern \"C\" void solve(float** x, int n) {}\n"));
  ASSERT_FALSE(bad_param);
  EXPECT_EQ(bad_param.error().line, 1);
  EXPECT_EQ(bad_param.error().field, "x");
}

TEST_F(BareFiles, ReadsKoptLines) {
  auto f = read_bare_kernel(write("k.cu",
                                  "// kopt: A[M, K] B[K, N]\n"
                                  "// kopt: grid = ceil_div(N, 16), ceil_div(M, 16)\n"
                                  "// kopt: block = 16, 16\n"
                                  "// kopt: outputs C\n"
                                  "extern \"C\" __global__ void k(const float* A) {}\n"));
  ASSERT_TRUE(f) << f.error().to_string();
  EXPECT_EQ(f->notes.shapes.at("A"), (std::vector<std::string>{"M", "K"}));
  EXPECT_EQ(f->notes.shapes.at("B"), (std::vector<std::string>{"K", "N"}));
  EXPECT_EQ(f->notes.grid, (std::vector<std::string>{"ceil_div(N, 16)", "ceil_div(M, 16)"}));
  EXPECT_EQ(f->notes.block, (std::vector<std::string>{"16", "16"}));
  EXPECT_EQ(f->notes.outputs, (std::vector<std::string>{"C"}));
  EXPECT_EQ(f->notes.lines.at("grid"), 2);
  auto bad = read_bare_kernel(
      write("b.cu", "\n// kopt: make it fast\nextern \"C\" void solve(float* x) {}\n"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().line, 2);
  EXPECT_NE(bad.error().message.find("make it fast"), std::string::npos);
}

TEST_F(BareFiles, SmallDimsDifferFromEachOtherAndKeepSmallOnes) {
  auto s = small_dims({{"M", 4096}, {"N", 4096}, {"K", 4096}, {"B", 8}, {"H", 37}});
  EXPECT_EQ(s.at("B"), 8);
  std::set<std::int64_t> values;
  for (const auto& [n, v] : s) values.insert(v);
  EXPECT_EQ(values.size(), 5u);
  for (const char* n : {"M", "N", "K"}) EXPECT_GT(s.at(n), 16);
}

TEST_F(BareFiles, TheFirstLineTellsAnInferredFileFromTheUsers) {
  EXPECT_EQ(inferred_hash_of(std::string(k_inferred_header) + " from a.cu (inputs 0123abcd).\nx"),
            "0123abcd");
  EXPECT_EQ(inferred_hash_of("# my problem\n" + std::string(k_inferred_header) + " (inputs 12)"),
            "");
}

TEST_F(BareFiles, AGemmSolveWithNothingConstLearnsItsOutputFromTheReference) {
  write("gemm.cu", k_gemm_solve);
  auto b = BareInference::start(request("gemm.cu", {{"M", 256}, {"N", 128}, {"K", 64}}));
  ASSERT_TRUE(b) << b.error().to_string();
  ASSERT_TRUE(b->take_inspect({{"reference", {{"params", {"A", "B", "C"}}, {"var_kw", true}}}}));
  json writes = b->writes_request(false);
  EXPECT_EQ(writes["tensors"][0]["shape"], json({b->writes_request(false)["small_dims"]["M"],
                                                 b->writes_request(false)["small_dims"]["K"]}));
  ASSERT_TRUE(b->take_writes({{"written", {"C"}}}));
  auto p = load(*b);
  ASSERT_TRUE(p) << p.error().to_string() << "\n" << m_toml;
  ASSERT_EQ(p->tensors.size(), 3u);
  EXPECT_EQ(p->tensors[0].role, Role::input);
  EXPECT_EQ(p->tensors[2].role, Role::output);
  EXPECT_EQ(p->tensors[1].shape[0].text(), "K");
  ASSERT_TRUE(p->cost);
  EXPECT_EQ(p->cost->flops.text(), "2 * M * N * K");
  ASSERT_EQ(p->kernels.size(), 1u);
  EXPECT_EQ(p->kernels[0].abi, KernelSpec::Abi::solve);
  EXPECT_EQ(p->kernels[0].params.at(0).values.size(), 3u);  // 32, 16, 64
  EXPECT_NE(m_toml.find("role = \"output\"  # reference() writes it"), std::string::npos);
  EXPECT_NE(m_toml.find("guessed: the GEMM convention"), std::string::npos);
  bool said = false;
  for (const auto& g : m_guesses) said = said || g.find("// kopt: A[M, K]") != std::string::npos;
  EXPECT_TRUE(said) << "the guess names the line that settles it";
}

TEST_F(BareFiles, SetupNamesEachExtentByTheDimThatHasItsValueAtBothSizes) {
  write("k.py", "def run_kernel(x, y, M, N, BLOCK=128, **kw):\n    pass\n");
  auto b = BareInference::start(request("k.py", {{"M", 4096}, {"N", 4096}}));
  ASSERT_TRUE(b);
  json small = b->inspect_request()["small_dims"];
  std::int64_t sm = small["M"], sn = small["N"];
  json stats = {{"min", -3.0}, {"max", 3.0}, {"mean", 0.0}, {"std", 1.0}};
  json facts = {
      {"reference", {{"params", {"x", "y"}}, {"var_kw", true}}},
      {"kernels", {{{"params", {"x", "y", "M", "N", "BLOCK"}}, {"defaults", {{"BLOCK", 128}}}}}},
      {"setup",
       {{"at_dims",
         {{"tensors",
           {{"x", {{"dtype", "f32"}, {"shape", {4096, 4096}}, {"stats", stats}}},
            {"y", {{"dtype", "f32"}, {"shape", {4096, 4096}}}}}},
          {"outputs", {"y"}}}},
        {"at_small",
         {{"tensors",
           {{"x", {{"dtype", "f32"}, {"shape", {sm, sn}}}},
            {"y", {{"dtype", "f32"}, {"shape", {sn, sm}}}}}}}}}}};
  ASSERT_TRUE(b->take_inspect(facts));
  ASSERT_TRUE(b->take_writes({{"written", {"y"}}}));
  auto p = load(*b);
  ASSERT_TRUE(p) << p.error().to_string() << "\n" << m_toml;
  EXPECT_EQ(p->tensors[0].shape[0].text(), "M");
  EXPECT_EQ(p->tensors[1].shape[0].text(), "N");  // a transpose: equal values, told apart
  EXPECT_EQ(p->tensors[1].role, Role::output);
  EXPECT_NE(m_toml.find("init = { kind = \"normal\""), std::string::npos) << m_toml;
  EXPECT_NE(m_toml.find("BLOCK = [128, 64, 256]"), std::string::npos) << m_toml;
}

TEST_F(BareFiles, WhatCannotBeInferredIsNamedWithWhatSettlesIt) {
  write("gemm.cu", k_gemm_solve);
  // A scalar of the signature with no dim.
  auto uncovered = BareInference::start(request("gemm.cu", {{"M", 256}, {"N", 128}}));
  ASSERT_FALSE(uncovered);
  EXPECT_EQ(uncovered.error().field, "K");
  EXPECT_EQ(uncovered.error().line, 5);
  EXPECT_NE(uncovered.error().message.find("--dims K="), std::string::npos);

  // reference() fails on the guessed shapes: the error names the `kopt:` line to write.
  write("two.cu", "extern \"C\" void solve(const float* x, float* y, int R, int C) {}\n");
  auto b = BareInference::start(request("two.cu", {{"R", 64}, {"C", 32}}));
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->take_inspect({{"reference", {{"params", {"x", "y"}}, {"var_kw", true}}}}));
  auto failed = b->take_writes({{"error", "RuntimeError: shape mismatch"}});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("// kopt: x[R, C] y[R, C]"), std::string::npos)
      << failed.error().message;

  // A reference that writes nothing, with nothing const: no output.
  auto c = BareInference::start(request("gemm.cu", {{"M", 8}, {"N", 8}, {"K", 8}}));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->take_inspect({{"reference", {{"params", {"A", "B", "C"}}, {"var_kw", true}}}}));
  auto none = c->take_writes({{"written", json::array()}, {"returned", {{"shape", {8, 8}}}}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("out.copy_"), std::string::npos) << none.error().message;

  // reference() without **kwargs that misses a dim.
  auto d = BareInference::start(request("gemm.cu", {{"M", 8}, {"N", 8}, {"K", 8}}));
  ASSERT_TRUE(d);
  auto narrow = d->take_inspect({{"reference", {{"params", {"A", "B", "C", "M", "N"}}}}});
  ASSERT_FALSE(narrow);
  EXPECT_NE(narrow.error().message.find("takes no argument K"), std::string::npos);

  // A `kopt:` shape that uses no dim, and one for no tensor.
  write("n.cu",
        "// kopt: x[n] y[m]\nextern \"C\" void solve(const float* x, float* y, int n) {}\n");
  auto e = BareInference::start(request("n.cu", {{"n", 8}}));
  ASSERT_TRUE(e);
  auto unknown = e->take_inspect({{"reference", {{"var_kw", true}}}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().line, 1);
  EXPECT_NE(unknown.error().message.find("--dims m="), std::string::npos);

  // A ModelNew file is refused by name, and so is a missing reference.
  write("new.py", "class ModelNew:\n    pass\n");
  auto mn = BareInference::start(request("new.py", {{"n", 8}}));
  ASSERT_FALSE(mn);
  EXPECT_EQ(mn.error().field, "ModelNew");
  BareRequest no_ref = request("gemm.cu", {{"M", 8}, {"N", 8}, {"K", 8}});
  no_ref.ref.reset();
  fs::remove(m_dir.path() / "ref.py");
  auto missing = BareInference::start(no_ref);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "--ref");
}

}  // namespace
}  // namespace kopt
