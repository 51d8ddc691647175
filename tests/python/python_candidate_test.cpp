// A candidate's Python code against kopt's clocks (label python): a Triton-kind module that
// rewrites a timer, at import or while it runs, is refused with what it replaced; references and
// PyTorch baselines run in another process, which a candidate's code never reaches. On the CPU
// here (CI), on the GPU on the device (scripts/device-check).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/sandbox.hpp"
#include "private_cache.hpp"
#include "torch_skip.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

constexpr int k_n = 1024;

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

class PythonCandidate : public test::PrivateCacheTest {
 protected:
  void SetUp() override {
    PrivateCacheTest::SetUp();
    std::vector<float> x(k_n);
    for (int i = 0; i < k_n; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
    const auto* bytes = reinterpret_cast<const std::byte*>(x.data());
    ASSERT_TRUE(write_file_atomic(m_dir.path() / "x.bin", {bytes, bytes + x.size() * 4}));
  }

  // y = relu(x) over k_n floats, by the module `source` (kind `kind`, entry `entry`).
  RunJob job(ModuleKind kind, const std::string& name, const std::string& source,
             const std::string& entry) {
    fs::path module = m_dir.path() / (name + ".py");
    EXPECT_TRUE(write_text_atomic(module, source));
    RunJob j;
    j.label = name;
    j.kind = kind;
    j.module_path = module;
    j.entry = entry;
    j.scalars["n"] = k_n;
    JobTensor x{"x", DType::f32, k_n * 4, Role::input, m_dir.path() / "x.bin"};
    x.shape = {k_n};
    JobTensor y{"y", DType::f32, k_n * 4, Role::output, {}, m_dir.path() / (name + ".y.bin")};
    y.shape = {k_n};
    j.tensors = {x, y};
    return j;
  }

  RunJob candidate(const std::string& name, const std::string& prelude,
                   const std::string& body = {}) {
    return job(ModuleKind::triton, name,
               "import time, torch\n" + prelude + "\ndef run_kernel(x, y, n, **_):\n" + body +
                   "    y.copy_(torch.relu(x))\n",
               "run_kernel");
  }

  RunJob reference() {
    return job(ModuleKind::python_reference, "ref",
               "import torch\n\ndef reference(x, y, n):\n    y.copy_(torch.relu(x))\n",
               "reference");
  }
};

TEST_F(PythonCandidate, AnHonestCandidateRuns) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r = runner.run(candidate("honest", ""));
  EXPECT_TRUE(r.ok()) << r.error;
}

TEST_F(PythonCandidate, ACandidateThatRewritesTheHostClockAtImportIsRefused) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r = runner.run(candidate("slow_clock",
                                     "_real = time.perf_counter\n"
                                     "time.perf_counter = lambda: _real() * 0.5\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("replaced time.perf_counter when its module was imported"),
            std::string::npos)
      << r.error;
}

TEST_F(PythonCandidate, ACandidateThatRewritesTorchEventsWhileItRunsIsRefused) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r =
      runner.run(candidate("late_patch", "",
                           "    _real = torch.cuda.Event.elapsed_time\n"
                           "    torch.cuda.Event.elapsed_time = lambda s, e: _real(s, e) * 0.7\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("replaced torch.cuda.Event.elapsed_time while kopt ran it"),
            std::string::npos)
      << r.error;
}

TEST_F(PythonCandidate, ACandidateThatRewritesKoptsWorkerIsRefused) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r =
      runner.run(candidate("worker_patch",
                           "import sys\n"
                           "sys.modules['__main__'].timed = lambda *a, **k: (1e-9, 0.0)\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("kopt worker timed"), std::string::npos) << r.error;
}

// The worker is a script and its parts (python/kopt_worker_*.py): a part's code is watched as
// the script's is. This candidate makes every drawn input read as unchanged, to hide that it
// writes into one.
TEST_F(PythonCandidate, ACandidateThatRewritesAPartOfKoptsWorkerIsRefused) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r = runner.run(
      candidate("part_patch",
                "import sys\n"
                "sys.modules['kopt_worker_draw'].drawn_unchanged = lambda *a, **k: True\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("kopt worker draw.drawn_unchanged"), std::string::npos) << r.error;
}

// The same rewrite out of sight: the part taken out of sys.modules first, where a lookup by name
// no longer finds it (its functions still run), and another of its functions deleted.
TEST_F(PythonCandidate, ACandidateThatHidesAPartBeforeRewritingItIsRefused) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult r = runner.run(candidate("hidden_patch",
                                     "import sys\n"
                                     "_m = sys.modules.pop('kopt_worker_draw')\n"
                                     "_m._draw_values = lambda recipe, i: i.double() * 0\n"
                                     "del _m._stored\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("kopt worker draw._draw_values"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("kopt worker draw._stored"), std::string::npos) << r.error;
}

// A candidate that fills the disk from its room (here: past a room allowance of 10 MiB) gets
// that as its verdict, not the machine's failure that every write of kopt's would then read
// as, which a resume would meet again; the next candidate gets a fresh room.
TEST_F(PythonCandidate, ACandidateThatFillsItsRoomIsRefusedAsItsOwnDoing) {
  KOPT_SKIP_WITHOUT_TORCH();
  std::optional<std::string> saved;
  if (const char* v = std::getenv("KOPT_CANDIDATE_ROOM_GB")) saved = v;
  ::setenv("KOPT_CANDIDATE_ROOM_GB", "0.01", 1);
  PythonRunner runner;
  RunResult r =
      runner.run(candidate("fill_disk", "",
                           "    import os, tempfile\n"
                           "    f = open(os.path.join(tempfile.gettempdir(), 'junk'), 'wb')\n"
                           "    f.write(b'x' * (32 << 20)); f.flush()\n"));
  RunResult next = runner.run(candidate("honest", ""));
  if (saved)
    ::setenv("KOPT_CANDIDATE_ROOM_GB", saved->c_str(), 1);
  else
    ::unsetenv("KOPT_CANDIDATE_ROOM_GB");
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.environment) << r.error;
  EXPECT_NE(r.error.find("the candidate filled its room"), std::string::npos) << r.error;
  EXPECT_TRUE(next.ok()) << next.error;
}

// The reference runs in a process the candidate never reached, and the next candidate in a
// fresh one: the patch of the first is nobody else's verdict.
TEST_F(PythonCandidate, ATamperingCandidateReachesNeitherTheReferenceNorTheNextCandidate) {
  KOPT_SKIP_WITHOUT_TORCH();
  PythonRunner runner;
  RunResult honest_ref = runner.run(reference());
  ASSERT_TRUE(honest_ref.ok()) << honest_ref.error;
  std::string patch =
      "import json\n"
      "json.dumps = lambda *a, **k: '{\"ok\": true, \"result\": {\"seconds\": 1e-9}}'\n";
  RunResult cheat = runner.run(candidate("json_patch", patch));
  ASSERT_FALSE(cheat.ok());
  EXPECT_NE(cheat.error.find("json.dumps"), std::string::npos) << cheat.error;
  RunResult ref = runner.run(reference());
  EXPECT_TRUE(ref.ok()) << ref.error;
  RunResult next = runner.run(candidate("honest", ""));
  EXPECT_TRUE(next.ok()) << next.error;
}

// The candidate's process is confined (backend/python/candidate_room.hpp): it reads the
// system, its Python and its own inputs, and nothing of kopt's; it writes its room only; it
// opens no network socket. Each attack is a candidate that would otherwise pass.
class SandboxedCandidate : public PythonCandidate {
 protected:
  void SetUp() override {
    PythonCandidate::SetUp();
    if (!sandbox_support().files()) GTEST_SKIP() << sandbox_support().summary();
    ASSERT_TRUE(write_text_atomic(cache_dir() / "refs" / "y.bin", "the reference's answers"));
  }
  RunResult attempt(const std::string& name, const std::string& body) {
    PythonRunner runner;
    RunResult ref = runner.run(reference());  // the honest twin's answer, on disk in m_dir
    EXPECT_TRUE(ref.ok()) << ref.error;
    return runner.run(candidate(name, "", body));
  }
};

TEST_F(SandboxedCandidate, ItCannotReadKoptsCache) {
  KOPT_SKIP_WITHOUT_TORCH();
  RunResult r =
      attempt("read_cache", "    open(" + quoted(cache_dir() / "refs" / "y.bin") + ").read()\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("PermissionError"), std::string::npos) << r.error;
}

TEST_F(SandboxedCandidate, ItCannotReadTheReferencesOutputs) {
  KOPT_SKIP_WITHOUT_TORCH();
  RunResult r =
      attempt("read_ref",
              "    import numpy\n"
              "    y.copy_(torch.from_numpy(numpy.fromfile(" +
                  quoted(m_dir.path() / "ref.y.bin") + ", dtype=numpy.float32)))\n    return\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("PermissionError"), std::string::npos) << r.error;
}

TEST_F(SandboxedCandidate, ItCannotWriteOutsideItsRoom) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path planted = cache_dir() / "experience.db";
  RunResult r = attempt("plant", "    open(" + quoted(planted) + ", 'w').write('x')\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("PermissionError"), std::string::npos) << r.error;
  EXPECT_FALSE(fs::exists(planted));
}

TEST_F(SandboxedCandidate, ItCannotOpenANetworkSocket) {
  KOPT_SKIP_WITHOUT_TORCH();
  if (!sandbox_support().network()) GTEST_SKIP() << sandbox_support().summary();
  RunResult r = attempt("phone_home", "    import socket\n    socket.socket(socket.AF_INET)\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("PermissionError"), std::string::npos) << r.error;
}

// Its scratch space works: a temporary file, written and read back, is no reason to fail.
TEST_F(SandboxedCandidate, ItWritesItsOwnTemporaryFiles) {
  KOPT_SKIP_WITHOUT_TORCH();
  RunResult r = attempt("scratch",
                        "    import tempfile\n"
                        "    with tempfile.NamedTemporaryFile() as f:\n"
                        "        f.write(b'x'); f.flush()\n");
  EXPECT_TRUE(r.ok()) << r.error;
}

// A sandbox that breaks what a candidate needs (a library reading from a place the sandbox does
// not know; here a file the worker's self-test must read) is kopt's environment failing: the
// candidate runs unconfined, and the table says so, rather than failing for no fault of its own.
TEST_F(SandboxedCandidate, ASandboxThatBreaksTheToolsIsSaidAndNotTheCandidatesFault) {
  KOPT_SKIP_WITHOUT_TORCH();
  fs::path needed = m_dir.path() / "needed.txt";
  ASSERT_TRUE(write_text_atomic(needed, "x"));
  ::setenv("KOPT_TEST_SELFTEST_READS", needed.c_str(), 1);
  PythonRunner runner;
  BenchJob job;
  job.variants = {candidate("honest", "")};
  job.options.rule.max_time_s = 0.2;
  job.options.rule.min_time_s = 0.01;
  BenchResult r = runner.bench(job);
  ::unsetenv("KOPT_TEST_SELFTEST_READS");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.sandbox.find("NOT confined"), std::string::npos) << r.sandbox;
  EXPECT_NE(r.sandbox.find("PermissionError"), std::string::npos) << r.sandbox;
  // Without the broken tool, the same job runs confined.
  PythonRunner confined;
  BenchResult c = confined.bench(job);
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(c.sandbox.rfind("confined (files confined by Landlock", 0), 0u) << c.sandbox;
}

TEST(HostClock, ATimerUnderKoptsClockOnADeviceBoundCallIsRefused) {
  // 100 us a call on kopt's clock, 10 us of it the host's: 70 us reported is not believed.
  std::string why = host_clock_disagreement(70e-6, 100e-6, 10e-6);
  EXPECT_NE(why.find("70%"), std::string::npos) << why;
  EXPECT_EQ(host_clock_disagreement(95e-6, 100e-6, 10e-6), "");   // launch gaps: believed
  EXPECT_EQ(host_clock_disagreement(150e-6, 100e-6, 10e-6), "");  // cold samples run longer
}

TEST(HostClock, ALaunchBoundCallCannotBeJudged) {
  // The host's 40 us dominate a 50 us call: back-to-back calls measure the host, not the kernel.
  EXPECT_EQ(host_clock_disagreement(5e-6, 50e-6, 40e-6), "");
  EXPECT_EQ(host_clock_disagreement(5e-6, 0, 0), "");
}

TEST(LateWork, WorkLeftRunningAfterTheWindowIsNotAResult) {
  // A side stream's 110 us kernel after a 3 us empty window.
  std::string why = late_work(3e-6, 110e-6);
  EXPECT_NE(why.find("still busy 110.0 us"), std::string::npos) << why;
  EXPECT_EQ(late_work(65e-6, 2e-6), "");    // cudaDeviceSynchronize on an idle device
  EXPECT_EQ(late_work(757e-6, 80e-6), "");  // within a tenth of a long window
}

}  // namespace
}  // namespace kopt
