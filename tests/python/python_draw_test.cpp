// Seeded inputs drawn by the Python worker (label python): for every dtype and init kind, the
// bytes a Python job draws from a recipe are the bytes kopt's C++ draws from it (tensor_draw.hpp
// and its twins in python/kopt_worker_draw.py), across the worker's chunks; a job that modifies
// a drawn input is caught without a copy of it. On the CPU here (CI), where torch's operations
// do the arithmetic; on the GPU on the device, where one jitted kernel a step does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/tensor_data.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

// Every init kind, randint's bounds off the integers (the draw takes their ceilings).
const std::vector<InitSpec> k_inits = {{InitKind::normal, 0.5, 2.0},
                                       {InitKind::uniform, -3, 7},
                                       {InitKind::randint, -300.5, 300.25},
                                       {InitKind::arange, 1, 0.5},
                                       {InitKind::constant, 3.25, 0}};

class PythonDraw : public test::PrivateCacheTest {
 protected:
  void SetUp() override {
    PrivateCacheTest::SetUp();
    // Chunks of 1000 elements, so that a few thousand cross several of them.
    ::setenv("KOPT_TEST_DRAW_CHUNK", "1000", 1);
  }
  void TearDown() override {
    ::unsetenv("KOPT_TEST_DRAW_CHUNK");
    PrivateCacheTest::TearDown();
  }

  // A reference that copies drawn input x into output y (and, with `touch`, writes x too).
  RunJob copy_job(const DrawRecipe& recipe, std::int64_t n, bool touch = false) {
    fs::path module = m_dir.path() / (touch ? "touch.py" : "copy.py");
    EXPECT_TRUE(
        write_text_atomic(module, std::string("def reference(x, y):\n    y.copy_(x)\n") +
                                      (touch ? "    x.view(-1)[x.numel() // 2] += 1\n" : "")));
    RunJob j;
    j.label = "copy";
    j.kind = ModuleKind::python_reference;
    j.module_path = module;
    j.entry = "reference";
    std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(recipe.dtype);
    JobTensor x{"x", recipe.dtype, bytes, Role::input, m_dir.path() / "never-written.bin"};
    x.shape = {n};
    x.draw = recipe;
    x.checksum = draw_token(recipe);
    JobTensor y{"y", recipe.dtype, bytes, Role::output, {}, m_dir.path() / "y.bin"};
    y.shape = {n};
    j.tensors = {x, y};
    return j;
  }
};

// Over seeds (a high bit set among them: the key's uint64 arithmetic) and sizes (one element,
// a chunk and a bit, a few chunks, many). On the device the first draw is the torch
// operations' (tensors this small do not compile the kernel), the others, after the worker's
// warm-up compiled it, the kernel's.
TEST_F(PythonDraw, EveryDtypeAndInitDrawsKoptsBytes) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  const std::vector<std::pair<std::uint64_t, std::int64_t>> draws = {{0xfedcba9876543210ull, 4321},
                                                                     {0xfedcba9876543210ull, 4321},
                                                                     {0, 1},
                                                                     {0x8000000000000001ull, 1001},
                                                                     {12345, 65537}};
  int compared = 0;
  for (auto [seed, n] : draws) {
    if (compared == 45) {
      EXPECT_EQ(runner.warm(false), "");
    }
    for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32,
                    DType::i16, DType::i8, DType::u8})
      for (const InitSpec& init : k_inits) {
        TensorSpec spec;
        spec.name = "x";
        spec.dtype = t;
        spec.init = init;
        DrawRecipe recipe = draw_recipe(spec, seed);
        HostTensor want = generate_tensor(spec, {n}, seed);
        RunResult r = runner.run(copy_job(recipe, n));
        std::string what = fmt::format("{} {}, seed {:#x}, {} elements", dtype_name(t),
                                       init_kind_name(init.kind), seed, n);
        ASSERT_TRUE(r.ok()) << what << ": " << r.error;
        EXPECT_EQ(r.input_checksums["x"], draw_token(recipe)) << what;
        auto got = read_binary_file(m_dir.path() / "y.bin");
        ASSERT_TRUE(got) << what;
        ASSERT_EQ(got->size(), want.data.size()) << what;
        std::size_t first = 0;
        while (first < want.data.size() && (*got)[first] == want.data[first]) ++first;
        EXPECT_EQ(first, want.data.size()) << what << ": the first byte that differs is byte "
                                           << first << " (element " << first / dtype_size(t) << ")";
        ++compared;
      }
  }
  EXPECT_EQ(compared, 5 * 45);
  EXPECT_FALSE(fs::exists(m_dir.path() / "never-written.bin")) << "drawn, never read";
}

// The GPU's draw is CUDA source the Python worker writes and torch's jiterator compiles: CI has
// no GPU, so the same source, with host stand-ins for its rounding intrinsics, is built by the
// host's compiler here and must give kopt's C++ values bit for bit, for every init kind, keys
// with the high bit set and indices past 32 and 52 bits, with the arguments the worker makes.
TEST_F(PythonDraw, TheGpuDrawsSourceBuiltForTheHostGivesKoptsValues) {
  KOPT_SKIP_WITHOUT_TORCH();
  auto cxx = find_program("c++");
  if (!cxx) GTEST_SKIP() << "no c++ on PATH";
  std::vector<DrawRecipe> recipes;
  nlohmann::json asked = nlohmann::json::array();
  for (std::uint64_t seed : {0xfedcba9876543210ull, 0ull, 0x8000000000000001ull})
    for (const InitSpec& init : k_inits) {
      TensorSpec spec;
      spec.name = "x";
      spec.init = init;
      recipes.push_back(draw_recipe(spec, seed));
      asked.push_back({{"kind", init_kind_name(init.kind)},
                       {"a", init.a},
                       {"b", init.b},
                       {"key", recipes.back().key}});
    }
  fs::path worker = python_worker_script(m_dir.path() / "cache").parent_path();
  SystemCommandRunner run;
  auto said = run.run({python_executable(), "-c",
                       "import json, sys\nsys.path.insert(0, sys.argv[1])\n"
                       "import kopt_worker_draw as d\n"
                       "print(json.dumps({'code': d._fused_code(), 'args': "
                       "[d._fused_args(r) for r in json.loads(sys.argv[2])]}))",
                       worker.string(), asked.dump()},
                      std::chrono::seconds(120));
  ASSERT_TRUE(said.ok()) << said.err;
  auto made = nlohmann::json::parse(said.out);
  const std::vector<std::uint64_t> indices = {
      0, 1, 2, 3, 63, 1000, 4321, 1ull << 31, (1ull << 32) + 5, (1ull << 40) + 7, (1ull << 52) + 3};
  std::string program =
      "#include <cmath>\n#include <cstdio>\n#include <cstring>\nusing std::floor;\n"
      "using std::frexp;\n"
      "static double __dmul_rn(double a, double b) { return a * b; }\n"
      "static double __dadd_rn(double a, double b) { return a + b; }\n"
      "static double __dsub_rn(double a, double b) { return a - b; }\n"
      "static double __ddiv_rn(double a, double b) { return a / b; }\n"
      "static double __dsqrt_rn(double a) { return std::sqrt(a); }\n"
      "static long long __double_as_longlong(double v) {\n"
      "  long long r;\n  std::memcpy(&r, &v, 8);\n  return r;\n}\n"
      "static double __longlong_as_double(long long v) {\n"
      "  double r;\n  std::memcpy(&r, &v, 8);\n  return r;\n}\n" +
      made["code"].get<std::string>() +
      "\nstruct Case {\n  long long key, kind;\n  double a, b;\n};\n"
      "int main() {\n  const Case cases[] = {\n";
  for (const auto& a : made["args"])
    program += fmt::format("      {{static_cast<long long>({}ull), {}, {:a}, {:a}}},\n",
                           static_cast<std::uint64_t>(a["key"].get<std::int64_t>()),
                           a["kind"].get<int>(), a["a"].get<double>(), a["b"].get<double>());
  program += "  };\n  const unsigned long long indices[] = {";
  for (auto i : indices) program += fmt::format("{}ull, ", i);
  program +=
      "};\n  for (const Case& c : cases)\n    for (unsigned long long i : indices)\n"
      "      std::printf(\"%lld\\n\", kopt_draw<long long>((long long)i, c.key, c.kind, c.a, "
      "c.b));\n}\n";
  fs::path source = m_dir.path() / "draw.cpp", binary = m_dir.path() / "draw";
  ASSERT_TRUE(write_text_atomic(source, program));
  auto built = run.run({cxx->string(), "-std=c++17", "-O2", "-ffp-contract=off", "-o",
                        binary.string(), source.string()},
                       std::chrono::seconds(300));
  ASSERT_TRUE(built.ok()) << built.err << program;
  auto ran = run.run({binary.string()}, std::chrono::seconds(60));
  ASSERT_TRUE(ran.ok()) << ran.err;
  std::istringstream lines(ran.out);
  int compared = 0;
  for (const DrawRecipe& r : recipes)
    for (std::uint64_t i : indices) {
      long long got = 0;
      ASSERT_TRUE(lines >> got) << "the program printed " << compared << " values";
      double want = draw_value(r, i);
      long long want_bits = 0;
      std::memcpy(&want_bits, &want, sizeof want);
      EXPECT_EQ(got, want_bits) << init_kind_name(r.kind) << " key " << r.key << " index " << i;
      ++compared;
    }
  EXPECT_EQ(compared, 15 * static_cast<int>(indices.size()));
}

TEST_F(PythonDraw, AJobThatWritesADrawnInputIsCaughtWithoutACopy) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  TensorSpec spec;
  spec.name = "x";
  DrawRecipe recipe = draw_recipe(spec, 1);
  RunResult r = runner.run(copy_job(recipe, 3000, true));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.input_checksums["x"], "modified");
}

// A reference output nothing reads (a KernelBench batch's check) stays where it was computed:
// the Python side counts it and writes no file. The counts and the checksum are the output's
// (the checksum recomputed here from the bytes it must have: each 32-bit word times 2i + 1,
// summed modulo 2^64), and one element changed changes the checksum.
TEST_F(PythonDraw, AnOutputNothingReadsIsSummarizedWhereItWasComputedAndNotWritten) {
  KOPT_SKIP_WITHOUT_TORCH();
  ::setenv("KOPT_TEST_SUMMARY_CHUNK", "1000", 1);  // several chunks
  PythonRunner runner;
  TensorSpec spec;
  spec.name = "x";
  const std::int64_t n = 4321;
  DrawRecipe recipe = draw_recipe(spec, 7);
  HostTensor x = generate_tensor(spec, {n}, 7);
  auto summarized = [&](const std::string& name, const std::string& body) {
    fs::path module = m_dir.path() / name;  // a module of its own: the worker keeps modules
    EXPECT_TRUE(write_text_atomic(module, "import math\ndef reference(x, y):\n" + body));
    RunJob j = copy_job(recipe, n);
    j.module_path = module;
    j.summarize_outputs = true;
    return runner.run(j);
  };
  // y = x, with a NaN at 10, an inf at 2000 and a -inf at 4000, and element 3000 set to 1e30.
  const std::string special =
      "    y.copy_(x)\n    y[10] = math.nan\n    y[2000] = math.inf\n    y[4000] = -math.inf\n";
  RunResult r = summarized("one.py", special + "    y[3000] = 1e30\n");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(fs::exists(m_dir.path() / "y.bin")) << "summarized, not written";
  ASSERT_EQ(r.outputs.count("y"), 1u);
  const OutputSummary& s = r.outputs["y"];
  EXPECT_EQ(s.elements, static_cast<std::uint64_t>(n));
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.inf, 2u);
  EXPECT_DOUBLE_EQ(s.max, 1e30f);
  std::vector<float> want(static_cast<std::size_t>(n));
  std::memcpy(want.data(), x.data.data(), x.data.size());
  want[10] = std::nanf("");
  want[2000] = INFINITY;
  want[4000] = -INFINITY;
  want[3000] = 1e30f;
  float lo = INFINITY;
  for (float v : want)
    if (std::isfinite(v)) lo = std::min(lo, v);
  EXPECT_DOUBLE_EQ(s.min, lo);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::int32_t word;
    std::memcpy(&word, &want[i], 4);
    if (i == 10) word = 0x7fc00000;  // torch's NaN
    sum += static_cast<std::uint64_t>(static_cast<std::int64_t>(word)) * (2 * i + 1);
  }
  EXPECT_EQ(s.checksum, fmt::format("{:016x}", sum));
  RunResult other = summarized("other.py", special + "    y[3000] = 2e30\n");
  ASSERT_TRUE(other.ok()) << other.error;
  EXPECT_NE(other.outputs["y"].checksum, s.checksum);
  ::unsetenv("KOPT_TEST_SUMMARY_CHUNK");
}

}  // namespace
}  // namespace kopt
