// kopt's Python process says what held its device memory (PythonRunner::memory): torch's
// allocator's peaks by kind of request, and each call's own working memory beside the
// tensors kopt gave it, which is what the KernelBench batch's memory bound counts. Torch's
// allocator counts CUDA memory only: on the CPU (CI) the report names the device and makes up
// no number; the counts are tested on the GPU through scripts/device-check.
#include <gtest/gtest.h>

#include <string>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

constexpr std::int64_t k_n = 1 << 20;           // 4 MiB of f32 in, 4 MiB out
constexpr std::int64_t k_scratch = 64ll << 20;  // what the reference allocates beside them
constexpr std::int64_t k_mib = 1 << 20;

class PythonMemory : public test::PrivateCacheTest {
 protected:
  // The device of the trusted process's report where it is not CUDA ("" where it is), after
  // checking that it makes up no number of `field` there.
  static std::string not_cuda(const nlohmann::json& m, const char* field) {
    const nlohmann::json& t = m["trusted"];
    std::string device = t.value("device", "");
    if (device.rfind("cuda", 0) == 0) return "";
    EXPECT_FALSE(t.contains(field)) << "no number made up on the CPU: " << m.dump();
    return device.empty() ? "?" : device;
  }
  RunJob reference() {
    fs::path module = m_dir.path() / "ref.py";
    EXPECT_TRUE(write_text_atomic(module,
                                  "import torch\n\ndef reference(x, y, **_):\n"
                                  "    scratch = torch.ones(" +
                                      std::to_string(k_scratch / 4) +
                                      ", device=x.device)\n"
                                      "    y.copy_(torch.relu(x) + scratch[: x.numel()])\n"));
    RunJob j;
    j.label = "ref";
    j.kind = ModuleKind::python_reference;
    j.module_path = module;
    j.entry = "reference";
    JobTensor x{"x", DType::f32, k_n * 4, Role::input};
    x.shape = {k_n};
    x.draw = DrawRecipe{InitKind::normal, 0.0, 1.0, 0x9e3779b97f4a7c15ull, DType::f32};
    JobTensor y{"y", DType::f32, k_n * 4, Role::output, {}, m_dir.path() / "y.bin"};
    y.shape = {k_n};
    j.tensors = {x, y};
    return j;
  }
  // A short bench of `module`'s eager baseline (setup_baseline() or baseline()) on
  // reference()'s tensors.
  BenchJob eager_bench(const fs::path& module) {
    RunJob eager = reference();
    eager.label = "eager";
    eager.kind = ModuleKind::torch_eager;
    eager.module_path = module;
    eager.entry = "baseline";
    BenchJob job;
    job.variants = {eager};
    job.options.rule.max_time_s = 0.05;
    job.options.rule.min_time_s = 0.01;
    return job;
  }
};

TEST_F(PythonMemory, AReferencesWorkingMemoryIsCountedBesideKoptsTensors) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  EXPECT_TRUE(runner.memory(false).empty()) << "no process running: nothing to say";
  RunResult r = runner.run(reference());
  ASSERT_TRUE(r.ok()) << r.error;
  nlohmann::json m = runner.memory(false);
  ASSERT_TRUE(m.contains("trusted")) << m.dump();
  const nlohmann::json& t = m["trusted"];
  if (std::string cpu = not_cuda(m, "work"); !cpu.empty())
    GTEST_SKIP() << "torch's allocator counts CUDA memory only; the worker runs on " << cpu;
  // Its scratch and the relu's result: beside the 8 MiB kopt drew and poisoned, not counting them.
  std::int64_t work = t["work"].value("python_reference", std::int64_t{-1});
  EXPECT_GE(work, k_scratch) << m.dump();
  EXPECT_LE(work, k_scratch + 4 * k_n + 4 * k_mib) << m.dump();
  std::int64_t run = t["reserved"].value("run python_reference", std::int64_t{0});
  EXPECT_GE(run, k_scratch + 8 * k_n)
      << "its peak holds kopt's tensors and the scratch: " << m.dump();
  // A reset counts from there: the next report has no run in it.
  (void)runner.memory(true);
  nlohmann::json after = runner.memory(false);
  EXPECT_FALSE(after["trusted"]["reserved"].contains("run python_reference")) << after.dump();
  EXPECT_FALSE(after["trusted"].contains("work")) << after.dump();
  EXPECT_LT(after["trusted"].value("now_reserved", k_scratch), k_scratch)
      << "the reset gave the cached blocks back: " << after.dump();
}

// The timing's L2 flush buffer lives as long as the process: it is made at the warm-up, before
// any problem's tensors (not at a first sample, between them), and a problem's report starts
// from what the process holds at its start, so that the buffer is not counted as the problem's.
TEST_F(PythonMemory, TheFlushBufferIsMadeAtTheWarmUpAndAReportStartsFromWhatIsHeld) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  runner.set_default_flush_bytes(96 * k_mib);
  ASSERT_EQ(runner.warm(false), "");
  (void)runner.memory(true);
  nlohmann::json m = runner.memory(false);
  ASSERT_TRUE(m.contains("trusted")) << m.dump();
  const nlohmann::json& t = m["trusted"];
  if (std::string cpu = not_cuda(m, "start_reserved"); !cpu.empty())
    GTEST_SKIP() << "torch's allocator counts CUDA memory only; the worker runs on " << cpu;
  EXPECT_GE(t.value("start_allocated", std::int64_t{0}), 96 * k_mib) << m.dump();
  EXPECT_GE(t.value("start_reserved", std::int64_t{0}), 96 * k_mib) << m.dump();
  RunResult r = runner.run(reference());
  ASSERT_TRUE(r.ok()) << r.error;
  nlohmann::json after = runner.memory(false)["trusted"];
  EXPECT_EQ(after.value("start_allocated", std::int64_t{-1}), t.value("start_allocated", 0))
      << "a report's start is its reset's, not moved by the run: " << after.dump();
}

// A job's tensors go with its job: a cycle through the job's call kept a reference's inputs (a
// 0.3 GiB weight on the H100) alive until Python's collector came by, beside the next job's.
TEST_F(PythonMemory, AJobsTensorsAreGoneWhenItEnds) {
  KOPT_SKIP_WITHOUT_TORCH();
  RunJob job = reference();
  ASSERT_TRUE(
      write_text_atomic(job.module_path,
                        "import weakref\nimport torch\n\n_earlier = []\n\n"
                        "def reference(x, y, **_):\n"
                        "    if any(r() is not None for r in _earlier):\n"
                        "        raise RuntimeError('an earlier job\\'s input is still alive')\n"
                        "    _earlier.append(weakref.ref(x))\n"
                        "    y.copy_(torch.relu(x))\n"));
  PythonRunner runner;
  for (int i = 0; i < 3; ++i) {
    RunResult r = runner.run(job);
    ASSERT_TRUE(r.ok()) << "job " << i << ": " << r.error;
  }
}

// A bench's end lets its modules go, and what they kept with them (a KernelBench model and its
// weights): the module-level object here is finalized by then, not by a later collection.
TEST_F(PythonMemory, ABenchsModulesAndWhatTheyKeptAreGoneWhenItEnds) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path mark = m_dir.path() / "finalized";
  fs::path module = m_dir.path() / "base.py";
  ASSERT_TRUE(write_text_atomic(
      module,
      "import torch\n\nclass _Kept:\n    def __del__(self):\n"
      "        open(" +
          nlohmann::json(mark.string()).dump() +
          ", 'w').write('gone')\n\n"
          "_kept = _Kept()\n\ndef baseline(x, **_):\n    return torch.relu(x)\n"));
  BenchJob job = eager_bench(module);
  PythonRunner runner;
  BenchResult r = runner.bench(job);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(fs::exists(mark)) << "the module's objects outlived the bench";
}

// The L2 is flushed through the one buffer the warm-up made. Compared by name ("cuda" against
// its buffer's "cuda:0"), the buffer was made again at every sample, a second one beside the
// first for a moment: 120 MiB at a problem's peak on the H200, past the bound of a small GEMM.
TEST_F(PythonMemory, SamplesFlushThroughTheBufferTheWarmUpMade) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path module = m_dir.path() / "base.py";
  ASSERT_TRUE(write_text_atomic(module,
                                "import torch\n\ndef baseline(x, **_):\n"
                                "    return torch.relu(x)\n"));
  BenchJob job = eager_bench(module);
  job.options.mode = CacheMode::cold;
  PythonRunner runner;
  runner.set_default_flush_bytes(96 * k_mib);
  ASSERT_EQ(runner.warm(false), "");
  (void)runner.memory(true);
  BenchResult r = runner.bench(job);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.flush_bytes, 96 * k_mib);
  nlohmann::json m = runner.memory(false);
  if (std::string cpu = not_cuda(m, "start_allocated"); !cpu.empty())
    GTEST_SKIP() << "torch's allocator counts CUDA memory only; the worker runs on " << cpu;
  const nlohmann::json& t = m["trusted"];
  std::int64_t start = t.value("start_allocated", std::int64_t{0});
  std::int64_t sample = t["allocated"].value("sample torch_eager", std::int64_t{0});
  ASSERT_GT(sample, 0) << m.dump();
  // x, the poisoned y and relu's result: 12 MiB beside what the process held at its reset.
  EXPECT_LT(sample - start, 32 * k_mib) << "a second flush buffer: " << m.dump();
}

// What a baseline's first calls allocate beside kopt's tensors (torch.compile's compiler
// benchmarks on tensors of its own) is its working memory, counted as a sample's is.
TEST_F(PythonMemory, ABaselinesFirstCallsCountInItsWorkingMemory) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path module = m_dir.path() / "first.py";
  ASSERT_TRUE(write_text_atomic(module,
                                "import torch\n\n_calls = []\n\ndef baseline(x, **_):\n"
                                "    _calls.append(1)\n"
                                "    if len(_calls) == 1:  # as a compiler's first call\n"
                                "        scratch = torch.ones(" +
                                    std::to_string(k_scratch / 4) +
                                    ", device=x.device)\n"
                                    "        del scratch\n"
                                    "    return torch.relu(x)\n"));
  BenchJob job = eager_bench(module);
  PythonRunner runner;
  BenchResult r = runner.bench(job);
  ASSERT_TRUE(r.ok()) << r.error;
  nlohmann::json m = runner.memory(false);
  if (std::string cpu = not_cuda(m, "work"); !cpu.empty())
    GTEST_SKIP() << "torch's allocator counts CUDA memory only; the worker runs on " << cpu;
  EXPECT_GE(m["trusted"]["work"].value("torch_eager", std::int64_t{0}), k_scratch) << m.dump();
}

// A baseline that returns its outputs (BASELINE_RETURNS_OUTPUTS, as the ref.py of a KernelBench
// import says) is given empty ones of their dtype and device, not GBs no one writes; one
// that does not say so gets the full, poisoned outputs as before.
TEST_F(PythonMemory, ABaselineThatReturnsItsOutputsIsGivenEmptyOnes) {
  KOPT_SKIP_WITHOUT_TORCH();
  for (bool returns : {true, false}) {
    SCOPED_TRACE(returns ? "returns its outputs" : "says nothing");
    fs::path module = m_dir.path() / (returns ? "lean.py" : "full.py");
    std::string expect = returns ? "y.numel() == 0" : "y.numel() == " + std::to_string(k_n);
    ASSERT_TRUE(write_text_atomic(
        module, std::string("import torch\n\n") +
                    (returns ? "BASELINE_RETURNS_OUTPUTS = True\n\n" : "") +
                    "def setup_baseline(x, y, **_):\n"
                    "    assert " +
                    expect +
                    ", 'y has %d elements' % y.numel()\n"
                    "    assert y.dtype == torch.float32 and y.device == x.device\n"
                    "    return torch.relu, [x]\n"));
    BenchJob job = eager_bench(module);
    PythonRunner runner;
    BenchResult r = runner.bench(job);
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.series.size(), 1u);
    EXPECT_EQ(r.series[0].label, "eager");
  }
}

}  // namespace
}  // namespace kopt
