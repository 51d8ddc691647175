// kopt's Python process says what held its device memory (PythonRunner::memory): torch's
// allocator's peaks by kind of request, and a reference call's own working memory beside the
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
  if (t.value("device", "").rfind("cuda", 0) != 0) {
    EXPECT_FALSE(t.contains("work")) << "no number made up on the CPU: " << m.dump();
    GTEST_SKIP() << "torch's allocator counts CUDA memory only; the worker runs on "
                 << t.value("device", "?");
  }
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

}  // namespace
}  // namespace kopt
