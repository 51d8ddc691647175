// `kopt export` with a real Python and nvcc, no GPU (label python): the files are valid Python,
// their CUDA compiles with nvcc (the launch and the kernel; the torch binding too where torch
// ships its CUDA headers), the exported Python runs on the CPU where the kernel does (a
// "Triton" kernel written in torch), bench/kernelbench_eval.py judges it, kopt init reads an
// exported solve.cu back, and the evaluator tells right from wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/expr_code.hpp"
#include "kopt_json.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::optional<fs::path> nvcc() {
  return find_program("nvcc", {"/usr/local/cuda/bin"});
}

class ExportPython : public test::PrivateCacheTest {
 protected:
  CommandResult sh(const std::vector<std::string>& argv) {
    return SystemCommandRunner().run(argv, 600s);
  }
  CommandResult python(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {python_executable()};
    argv.insert(argv.end(), args.begin(), args.end());
    return sh(argv);
  }
  // kopt export ... --json, which must succeed; the files it wrote.
  std::vector<std::string> exported(std::vector<std::string> args) {
    args.insert(args.begin(), "export");
    int rc = -1;
    auto j = test::kopt_json(args, rc);
    EXPECT_EQ(rc, 0) << j.dump(2);
    return j.value("files", std::vector<std::string>{});
  }
  std::string example(const std::string& name) {
    return (test::source_dir() / "examples" / name).string();
  }
  fs::path at(const std::string& name) { return m_dir.path() / name; }
  // A module-level string of an exported file, as Python reads it.
  std::string python_value(const std::string& file, const std::string& name) {
    auto r = python({"-c",
                     "import importlib.util, sys\n"
                     "s = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
                     "m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
                     "sys.stdout.write(getattr(m, sys.argv[2]))\n",
                     file, name});
    EXPECT_TRUE(r.ok()) << r.err;
    return r.out;
  }
  // nvcc compiles `source` (-c, or --shared for a solve() library).
  void compiles(const std::string& source, const std::string& name, bool shared,
                const std::vector<std::string>& extra = {}) {
    fs::path cu = at(name + ".cu");
    ASSERT_TRUE(write_text_atomic(cu, source));
    std::vector<std::string> argv = {nvcc()->string(), "-std=c++17", "-arch=sm_80"};
    if (shared)
      argv.insert(argv.end(), {"--shared", "-Xcompiler", "-fPIC", "-o", at(name + ".so").string()});
    else
      argv.insert(argv.end(), {"-c", "-o", at(name + ".o").string()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(cu.string());
    auto r = sh(argv);
    EXPECT_TRUE(r.ok()) << name << ":\n" << r.out << r.err;
  }
  // The CUDA between the markers of a ModelNew's extension: the kernel and its launch.
  static std::string kernel_part(const std::string& cuda) {
    std::size_t begin = cuda.find("// ---- kopt export: the kernel begins ----");
    std::size_t end = cuda.find("// ---- kopt export: the kernel ends ----");
    EXPECT_NE(begin, std::string::npos);
    EXPECT_NE(end, std::string::npos);
    return begin == std::string::npos || end == std::string::npos ? ""
                                                                  : cuda.substr(begin, end - begin);
  }
  // A copy of an example with one more kernel: `source` (written beside) as a Triton-kind
  // kernel, run_kernel written in torch so that it runs on the CPU.
  fs::path with_torch_kernel(const std::string& name, const std::string& kernel_py,
                             const std::string& params = "") {
    fs::path dir = at(fs::path(name).filename().string());
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(example(name)))
      if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename());
    EXPECT_TRUE(write_text_atomic(dir / "kernel_torch.py", kernel_py));
    auto toml = read_text_file(dir / "kopt.toml");
    EXPECT_TRUE(toml);
    EXPECT_TRUE(
        write_text_atomic(dir / "kopt.toml", *toml +
                                                 "\n[[kernels]]\nname = \"torch\"\nsource = "
                                                 "\"kernel_torch.py\"\nentry = \"run_kernel\"\n" +
                                                 params));
    return dir;
  }
  CommandResult evaluate(const std::string& model, const std::string& model_new) {
    return python({(test::source_dir() / "bench/kernelbench_eval.py").string(), model, model_new,
                   "--device", "cpu", "--trials", "2", "--timing-iters", "2", "--json"});
  }
};

// The Python of expressions computes what kopt computes, negative operands and all.
// Expressions of every operator kopt.toml knows, with negative operands and mixed types.
const std::vector<std::string> k_exprs = {"ceil_div(M * N, B)",
                                          "M / B",
                                          "-M / B",
                                          "M % B",
                                          "-M % B",
                                          "M / -B",
                                          "(M + N) * B - K",
                                          "M - (N - K)",
                                          "2 ** K + pow(K, 2)",
                                          "log2(M)",
                                          "min(M, N, K)",
                                          "max(M, 0.5) * 2",
                                          "M > N ? M : N",
                                          "M > 1 && N < 2 || !K",
                                          "(M < N) == (N < K)",
                                          "sqrt(M) + 1",
                                          "M / 2.0",
                                          "ceil_div(-M, B)",
                                          "abs(N - M)"};

TEST_F(ExportPython, ExpressionsInPythonComputeWhatKoptComputes) {
  KOPT_SKIP_WITHOUT_TORCH();
  const std::vector<std::string>& exprs = k_exprs;
  const std::vector<std::map<std::string, std::int64_t>> scopes = {
      {{"M", 37}, {"N", 4096}, {"K", 3}, {"B", 128}},
      {{"M", 1}, {"N", 0}, {"K", 0}, {"B", 7}},
      {{"M", 1000003}, {"N", 17}, {"K", 5}, {"B", 3}}};
  std::string script =
      "import math, json\n" + expr_code_helpers(CodeLanguage::python) + "\nout = []\n";
  for (const auto& sc : scopes) {
    std::string assign;
    for (const auto& [n, v] : sc) assign += n + " = " + std::to_string(v) + "; ";
    script += assign + "\nout.append([";
    for (const auto& text : exprs) {
      auto e = Expr::parse(text);
      ASSERT_TRUE(e) << text;
      auto code = expr_code(*e, CodeLanguage::python,
                            [](const std::string& n) -> Expected<std::string> { return n; });
      ASSERT_TRUE(code) << text;
      script += "float(" + *code + "), ";
    }
    script += "])\n";
  }
  script += "print(json.dumps(out))\n";
  auto r = python({"-c", script});
  ASSERT_TRUE(r.ok()) << r.err << script;
  auto got = nlohmann::json::parse(r.out);
  for (std::size_t s = 0; s < scopes.size(); ++s) {
    Scope scope;
    for (const auto& [n, v] : scopes[s]) scope[n] = v;
    for (std::size_t i = 0; i < exprs.size(); ++i) {
      auto want = Expr::parse(exprs[i])->evaluate(scope);
      ASSERT_TRUE(want) << exprs[i];
      EXPECT_DOUBLE_EQ(got[s][i].get<double>(), as_double(*want)) << exprs[i] << " at scope " << s;
    }
  }
}

// The C++ of the same expressions, built by the host's compiler, computes it too.
TEST_F(ExportPython, ExpressionsInCppComputeWhatKoptComputes) {
  auto cxx = find_program("c++");
  if (!cxx) GTEST_SKIP() << "no c++ on PATH";
  std::vector<std::string> exprs = k_exprs;
  exprs.push_back("4294967296 * M");  // past 32 bits: C++ must not overflow
  Scope scope{{"M", std::int64_t{1000003}},
              {"N", std::int64_t{17}},
              {"K", std::int64_t{5}},
              {"B", std::int64_t{3}}};
  std::string program =
      "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
      "#include <cstdio>\n#include <cstdlib>\n" +
      expr_code_helpers(CodeLanguage::cpp) +
      "int main() {\n  int64_t M = 1000003, N = 17, K = 5, B = 3;\n";
  for (const auto& text : exprs) {
    auto code = expr_code(*Expr::parse(text), CodeLanguage::cpp,
                          [](const std::string& n) -> Expected<std::string> { return n; });
    ASSERT_TRUE(code) << text;
    program += "  std::printf(\"%.17g\\n\", double(" + *code + "));\n";
  }
  program += "}\n";
  ASSERT_TRUE(write_text_atomic(at("exprs.cpp"), program));
  auto built =
      sh({cxx->string(), "-std=c++17", "-o", at("exprs").string(), at("exprs.cpp").string()});
  ASSERT_TRUE(built.ok()) << built.err << program;
  auto ran = sh({at("exprs").string()});
  ASSERT_TRUE(ran.ok()) << ran.err;
  std::istringstream lines(ran.out);
  for (const auto& text : exprs) {
    double got = 0;
    lines >> got;
    auto want = Expr::parse(text)->evaluate(scope);
    ASSERT_TRUE(want) << text;
    EXPECT_DOUBLE_EQ(got, as_double(*want)) << text;
  }
}

TEST_F(ExportPython, TheExportsArePythonAndTheirCudaCompiles) {
  KOPT_SKIP_WITHOUT_TORCH();
  if (!nvcc()) GTEST_SKIP() << "no nvcc (the CUDA toolkit)";
  struct Case {
    std::string problem, kernel, set;
  };
  for (const Case& c :
       {Case{"kernelbench/19_ReLU", "vec", "VEC=1"},
        Case{"kernelbench/19_ReLU", "solve", "THREADS=512"},
        Case{"kernelbench/23_Softmax", "online", "BLOCK=256"},
        Case{"gemm_f32", "register_tiled", "BM=128"}, Case{"gemm_f32", "naive", ""}}) {
    SCOPED_TRACE(c.problem + " " + c.kernel);
    std::string tag = fs::path(c.problem).filename().string() + "_" + c.kernel;
    std::vector<std::string> sets;
    if (!c.set.empty()) sets = {"--set", c.set};
    auto args = [&](const std::string& format, const std::string& out) {
      std::vector<std::string> a = {
          example(c.problem), "--kernel", c.kernel, "--format", format, "--out", at(out).string()};
      a.insert(a.end(), sets.begin(), sets.end());
      return a;
    };
    auto py = exported(args("modelnew", tag + ".py"));
    ASSERT_EQ(py.size(), 1u);
    auto compiled = python({"-m", "py_compile", py[0]});
    EXPECT_TRUE(compiled.ok()) << compiled.err;
    compiles(kernel_part(python_value(py[0], "_KOPT_KERNEL_CUDA")), tag + "_kernel", false);
    if (c.problem == "gemm_f32")
      compiles(kernel_part(python_value(py[0], "_KOPT_REFERENCE_CUDA")), tag + "_reference", false);
    auto solve = exported(args("solve", tag + "_solve"));
    auto cu = read_text_file(at(tag + "_solve") / "solve.cu");
    ASSERT_TRUE(cu);
    compiles(*cu, tag + "_solve", true);
    auto ref = python({"-m", "py_compile", (at(tag + "_solve") / "ref.py").string()});
    EXPECT_TRUE(ref.ok()) << ref.err;
  }
}

TEST_F(ExportPython, TheTorchBindingCompilesWhereTorchShipsItsCudaHeaders) {
  KOPT_SKIP_WITHOUT_TORCH();
  if (!nvcc()) GTEST_SKIP() << "no nvcc (the CUDA toolkit)";
  auto inc = python({"-c",
                     "import sys, torch.utils.cpp_extension as c, sysconfig\n"
                     "print('\\n'.join(c.include_paths(cuda=True) + "
                     "[sysconfig.get_paths()['include']]))"});
  ASSERT_TRUE(inc.ok()) << inc.err;
  std::vector<std::string> flags;
  bool cuda_headers = false;
  std::istringstream lines(inc.out);
  for (std::string l; std::getline(lines, l);) {
    flags.push_back("-I" + l);
    cuda_headers = cuda_headers || fs::exists(fs::path(l) / "ATen/cuda/CUDAContext.h");
  }
  if (!cuda_headers)
    GTEST_SKIP() << "this torch has no CUDA headers (ATen/cuda/CUDAContext.h): a CPU build";
  auto py = exported({example("kernelbench/19_ReLU"), "--kernel", "vec", "--format", "modelnew",
                      "--out", at("relu.py").string()});
  ASSERT_EQ(py.size(), 1u);
  flags.insert(flags.end(),
               {"-DTORCH_EXTENSION_NAME=kopt_test", "-DTORCH_API_INCLUDE_EXTENSION_H"});
  compiles(python_value(py[0], "_KOPT_KERNEL_CUDA"), "relu_binding", false, flags);
}

TEST_F(ExportPython, AModelNewRunsOnTheCpuAndTheEvaluatorJudgesIt) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path relu =
      with_torch_kernel("kernelbench/19_ReLU",
                        "import torch\n\n\ndef run_kernel(x, out, batch_size, dim, SHIFT, **_):\n"
                        "    torch.clamp(x + SHIFT, min=0, out=out)\n",
                        "[kernels.params]\nSHIFT = [0, 1]\n");
  auto right = exported({relu.string(), "--kernel", "torch", "--format", "modelnew", "--out",
                         at("right.py").string()});
  ASSERT_EQ(right.size(), 1u);
  std::string model = (relu / "model.py").string();
  auto ok = evaluate(model, right[0]);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  auto report = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(report["correct"].get<bool>());
  EXPECT_EQ(report["timer"], "perf_counter");
  EXPECT_GT(report["new_ms"].get<double>(), 0);
  // The point is the kernel's: SHIFT=1 is a wrong kernel, and the evaluator says so.
  auto wrong = exported({relu.string(), "--kernel", "torch", "--set", "SHIFT=1", "--format",
                         "modelnew", "--out", at("wrong.py").string()});
  ASSERT_EQ(wrong.size(), 1u);
  auto bad = evaluate(model, wrong[0]);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_FALSE(nlohmann::json::parse(bad.out)["correct"].get<bool>());

  // A problem with no model.py: its Model is the reference (ref.py), drawn at --dim.
  fs::path gelu =
      with_torch_kernel("gelu",
                        "import torch\n\n\ndef run_kernel(x, y, n, **_):\n"
                        "    y.copy_(torch.nn.functional.gelu(x, approximate='tanh'))\n");
  auto g = exported({gelu.string(), "--kernel", "torch", "--dim", "n=4099", "--format", "modelnew",
                     "--out", at("gelu.py").string()});
  ASSERT_EQ(g.size(), 1u);
  auto same = evaluate(g[0], g[0]);
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
}

TEST_F(ExportPython, ModelNewComputesWithTheModelsOwnWeights) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path ln = with_torch_kernel(
      "kernelbench/40_LayerNorm",
      "import torch\n\n\ndef run_kernel(x, ln_weight, ln_bias, out, **_):\n"
      "    out.copy_(torch.nn.functional.layer_norm(x, x.shape[1:], ln_weight, ln_bias))\n");
  auto py = exported(
      {ln.string(), "--kernel", "torch", "--format", "modelnew", "--out", at("ln.py").string()});
  ASSERT_EQ(py.size(), 1u);
  // Weights that are not the init's ones and zeros: a kernel must take them from the model.
  auto r = python({"-c",
                   "import importlib.util, sys, torch\n"
                   "s = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
                   "m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
                   "torch.manual_seed(0)\n"
                   "ref, new = m.Model(*m.get_init_inputs()), m.ModelNew(*m.get_init_inputs())\n"
                   "with torch.no_grad():\n"
                   "    for p in ref.parameters(): p.normal_()\n"
                   "new.load_state_dict(ref.state_dict())\n"
                   "x = [t[:2] for t in m.get_inputs()]\n"
                   "with torch.no_grad():\n"
                   "    a, b = ref(*x), new(*x)\n"
                   "    c = m.ModelNew(*m.get_init_inputs())(*x)\n"
                   "print(float((a - b).abs().max()), float((a - c).abs().max()))\n",
                   py[0]});
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  std::istringstream diffs(r.out);
  double same = -1, fresh = -1;
  diffs >> same >> fresh;
  EXPECT_LT(same, 1e-4) << r.out;
  EXPECT_GT(fresh, 1e-2) << "the weights matter, so the test can tell: " << r.out;
}

TEST_F(ExportPython, KoptInitReadsAnExportedSolveCuBack) {
  KOPT_SKIP_WITHOUT_TORCH();
  auto files = exported({example("kernelbench/19_ReLU"), "--kernel", "vec", "--set", "BLOCK=512",
                         "--format", "solve", "--out", at("relu_solve").string()});
  ASSERT_FALSE(files.empty());
  int rc = -1;
  auto init =
      test::kopt_json({"init", (at("relu_solve") / "solve.cu").string(), "--ref",
                       (at("relu_solve") / "ref.py").string(), "--dims", "batch_size=64,dim=32"},
                      rc);
  ASSERT_EQ(rc, 0) << init.dump(2);
  ASSERT_EQ(init["tensors"].size(), 2u);
  EXPECT_EQ(
      init["tensors"][0],
      nlohmann::json(
          {{"name", "x"}, {"dtype", "f32"}, {"shape", {"batch_size", "dim"}}, {"role", "input"}}));
  EXPECT_EQ(init["tensors"][1]["role"], "output");
  auto toml = read_text_file(at("relu_solve") / "kopt.toml");
  ASSERT_TRUE(toml);
  EXPECT_NE(toml->find("BLOCK = [512, 256, 1024]"), std::string::npos) << *toml;
  EXPECT_NE(toml->find("atol"), std::string::npos) << "ref.py's tolerance is read";
}

TEST_F(ExportPython, TheEvaluatorRefusesBadInputWithExit2) {
  KOPT_SKIP_WITHOUT_TORCH();
  ASSERT_TRUE(write_text_atomic(at("no_model.py"), "import torch\n"));
  auto none = evaluate(at("no_model.py").string(), at("no_model.py").string());
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  EXPECT_NE(none.out.find("defines no Model"), std::string::npos) << none.out;
  auto missing = evaluate(at("nope.py").string(), at("nope.py").string());
  EXPECT_EQ(missing.exit_code, 2);
  ASSERT_TRUE(write_text_atomic(at("crash.py"),
                                "import torch\nimport torch.nn as nn\n\n\n"
                                "class Model(nn.Module):\n    def forward(self, x):\n"
                                "        return x * 2\n\n\n"
                                "class ModelNew(Model):\n    def forward(self, x):\n"
                                "        raise RuntimeError('no kernel')\n\n\n"
                                "def get_inputs():\n    return [torch.randn(4)]\n\n\n"
                                "def get_init_inputs():\n    return []\n"));
  auto crash = evaluate(at("crash.py").string(), at("crash.py").string());
  EXPECT_EQ(crash.exit_code, 1) << "an error in ModelNew.forward is a wrong ModelNew";
  EXPECT_NE(crash.out.find("no kernel"), std::string::npos) << crash.out;
}

}  // namespace
}  // namespace kopt
