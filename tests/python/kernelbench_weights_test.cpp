// An imported KernelBench model's weights, loaded for every job (label python): the reference
// (ref.py) and a ModelNew through the import's adapter, called as kopt's worker calls them, job
// after job, with new weights each time. Found on the H100 (2026-11-27): the adapter knew the
// tensors it had loaded by id and address, which the GPU's caching allocator and Python hand to
// the next job's tensors, so an honest ModelNew kept the first seed's weights and failed the
// later seeds of seven convolution problems.
#include <gtest/gtest.h>

#include <chrono>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_json.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class KernelbenchWeights : public test::PrivateCacheTest {};

constexpr const char* k_linear =
    "import torch\nimport torch.nn as nn\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.linear = nn.Linear(16, 8)\n\n"
    "    def forward(self, x):\n"
    "        return self.linear(x)\n\n"
    "def get_inputs():\n    return [torch.randn(4, 16)]\n\n"
    "def get_init_inputs():\n    return []\n";

// Loads ref.py and ModelNew (the model file, `class ModelNew(Model)`, the adapter) and calls
// both on jobs whose weights are new values in the same tensors (what the GPU allocator does
// to a job's tensors: the same address, often the same id) and then new tensors over one
// buffer; each result must be the model's on that job's weights.
constexpr const char* k_jobs = R"(
import importlib.util, sys
import torch
d = sys.argv[1]
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m
with open(d + "/cand.py", "w") as f:
    f.write(open(d + "/model.py").read() + "\n\nclass ModelNew(Model):\n    pass\n"
            + open(d + "/modelnew_adapter.py").read())
ref, cand = load(d + "/ref.py", "ref"), load(d + "/cand.py", "cand")
shapes = {n: p.shape for n, p in ref._kb.Model().named_parameters()}
x_name = [v for k, v in ref.FORWARD if k == "tensor"][0]
w_name, b_name = ref.PARAMETERS["linear.weight"], ref.PARAMETERS["linear.bias"]
out = ref.OUTPUTS[0]
kept = {x_name: torch.empty(4, 16), w_name: torch.empty(shapes["linear.weight"]),
        b_name: torch.empty(shapes["linear.bias"]), out: torch.empty(4, 8)}
buffer = {n: torch.empty(t.numel()) for n, t in kept.items()}
stale, held = [], []
for job in range(6):
    torch.manual_seed(job)
    if job < 3:  # new values in the same tensors
        kw = kept
    else:  # new tensor objects over the same memory
        kw = {n: buffer[n][:t.numel()].view(t.shape) for n, t in kept.items()}
    for n in (x_name, w_name, b_name):
        kw[n].normal_()
    expected = torch.nn.functional.linear(kw[x_name], kw[w_name], kw[b_name])
    ref.reference(**kw)
    if not torch.allclose(kw[out], expected):
        stale.append("reference, job %d" % job)
    if not torch.allclose(cand.run_kernel(**kw)[out], expected):
        stale.append("ModelNew, job %d" % job)
    model, args = ref.setup_baseline(**kw)  # the baselines' model, after the reference's call
    with torch.no_grad():
        if not torch.allclose(model(*args), expected):
            stale.append("setup_baseline, job %d" % job)
    del model, args
    ref.reference(**kw)  # the last call is the reference's: the model keeps nothing of the job's
    ptrs = {kw[n].data_ptr() for n in (w_name, b_name)}
    if any(p.numel() and p.data_ptr() in ptrs for e in ref._models.values() for p in e[0].parameters()):
        held.append("job %d" % job)
    del kw
print("stale weights: " + (", ".join(stale) if stale else "none"))
print("weights held after the reference's call: " + (", ".join(held) if held else "none"))
sys.exit(1 if stale or held else 0)
)";

TEST_F(KernelbenchWeights, EveryJobsWeightsAreLoadedIntoTheReferenceAndTheModelNew) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path src = m_dir.path() / "src";
  ASSERT_TRUE(write_text_atomic(src / "9_Linear.py", k_linear));
  fs::path out = m_dir.path() / "out";
  int rc = -1;
  auto j = test::kopt_json(
      {"--backend", "opencl", "import", "kernelbench", src.string(), "--out", out.string()}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_TRUE(write_text_atomic(m_dir.path() / "jobs.py", k_jobs));
  auto r = SystemCommandRunner().run(
      {python_executable(), (m_dir.path() / "jobs.py").string(), (out / "9_Linear").string()},
      std::chrono::seconds(120));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("stale weights: none"), std::string::npos) << r.out << r.err;
  // A model kept for the next job held the last job's weights: 4 GiB of a Linear stayed on the
  // device beside the baselines' own (H100, 2026-11-28).
  EXPECT_NE(r.out.find("weights held after the reference's call: none"), std::string::npos)
      << r.out << r.err;
}

}  // namespace
}  // namespace kopt
