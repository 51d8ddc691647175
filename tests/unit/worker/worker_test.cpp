// The worker protocol, the worker loop with a fake executor, and the client against real
// child processes: a real `kopt worker` serving a C++ reference (no GPU needed), a worker
// that hangs (watchdog), and one that dies (crash) — each followed by a good job.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kopt/backend/cuda/executor.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/worker/protocol.hpp"
#include "kopt/worker/worker_client.hpp"
#include "kopt/worker/worker_loop.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

RunJob sample_job() {
  RunJob job;
  job.label = "demo/k BLOCK=256";
  job.kind = ModuleKind::cubin;
  job.module_path = "/cache/k.cubin";
  job.entry = "_Z1kPf";
  job.grid = {4, 2, 1};
  job.block = {256, 1, 1};
  job.shared_mem = 1024;
  job.args = {ResolvedArg{"x", DType::f32, std::int64_t{0}},
              ResolvedArg{"", DType::i64, std::int64_t{1} << 40},
              ResolvedArg{"", DType::f32, 1e-6}};
  job.tensors = {JobTensor{"x", DType::f32, 4096, Role::inout, "/in/x.bin", "/out/x.bin"}};
  return job;
}

TEST(Protocol, RunJobRoundTrips) {
  RunJob job = sample_job();
  RunJob back = run_job_from_json(json::parse(to_json(job).dump()));
  EXPECT_EQ(to_json(back), to_json(job));
  EXPECT_EQ(std::get<std::int64_t>(back.args[1].value), std::int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(std::get<double>(back.args[2].value), 1e-6);
  EXPECT_EQ(back.tensors[0].role, Role::inout);
  job.tensors[0].tolerance = {1e-5, 2e-3};  // the checker's, for comparing timed launches
  back = run_job_from_json(json::parse(to_json(job).dump()));
  EXPECT_EQ(back.tensors[0].tolerance.atol, 1e-5);
  EXPECT_EQ(back.tensors[0].tolerance.rtol, 2e-3);
  job.in_f64 = true;  // an fp64 reference
  EXPECT_TRUE(run_job_from_json(json::parse(to_json(job).dump())).in_f64);
  job.hash_inputs = true;  // a CUDA reference's inputs drawn where it runs: lost, read from files
  EXPECT_TRUE(run_job_from_json(json::parse(to_json(job).dump())).hash_inputs);
  // A timing job's secret seed crosses as a recipe, beside seed 1's.
  job.tensors[0].draw = DrawRecipe{InitKind::normal, 0.0, 1.0, 11, DType::f32};
  job.tensors[0].secret_draw =
      DrawRecipe{InitKind::uniform, -2.0, 3.0, 0xfeedull << 40, DType::f32};
  back = run_job_from_json(json::parse(to_json(job).dump()));
  ASSERT_TRUE(back.tensors[0].secret_draw);
  EXPECT_EQ(back.tensors[0].secret_draw->kind, InitKind::uniform);
  EXPECT_EQ(back.tensors[0].secret_draw->key, 0xfeedull << 40);
  EXPECT_EQ(back.tensors[0].draw->key, 11u);
}

TEST(Protocol, RunResultRoundTripsAndRejectsUnknownStatus) {
  RunResult r;
  r.status = RunStatus::fault;
  r.error = "CUDA_ERROR_ILLEGAL_ADDRESS";
  r.fatal = true;
  r.input_checksums = {{"x", "00ff"}};
  r.resources.registers = 40;
  r.reference_atol = 1e-2;  // a ref.py's own tolerance: lost on the way, the check used 1e-5
  r.environment = true;     // kopt's own failure: lost on the way, it became the kernel's verdict
  RunResult back = run_result_from_json(to_json(r));
  EXPECT_TRUE(back.environment);
  EXPECT_EQ(back.reference_atol, 1e-2);
  EXPECT_EQ(back.reference_rtol, -1.0);
  EXPECT_EQ(back.status, RunStatus::fault);
  EXPECT_TRUE(back.fatal);
  EXPECT_EQ(back.input_checksums.at("x"), "00ff");
  EXPECT_EQ(back.resources.registers, 40);
  json bad = to_json(r);
  bad["status"] = "exploded";
  EXPECT_THROW(run_result_from_json(bad), std::invalid_argument);
}

class FakeExecutor final : public Executor {
 public:
  explicit FakeExecutor(RunStatus status) : m_status(status) {}
  Expected<DeviceInfo> device_info() const override {
    DeviceInfo d;
    d.name = "Fake GPU";
    d.cc_major = 9;
    return d;
  }
  RunResult run(const RunJob&) override {
    RunResult r;
    r.status = m_status;
    r.fatal = m_status == RunStatus::fault;
    return r;
  }
  BenchResult bench(const BenchJob& job) override {
    BenchResult r;
    r.status = m_status;
    for (const auto& v : job.variants)
      r.series.push_back(SampleSeries{v.label, {1e-3, 2e-3}, {false, true}});
    if (!r.series.empty() &&
        job.options.verify_samples) {  // what a timer says of a skipping kernel
      SampleVerification& check = r.series[0].verification;
      check.enabled = true;
      check.poisoned_samples = 1;
      check.failed_sample = 1;
      check.failure =
          "timed sample samples_s[1] (outputs poisoned before it): output 'y': ... left poisoned";
    }
    return r;
  }
  CeilingsResult ceilings() override {
    CeilingsResult r;
    r.ceilings.push_back(Ceiling{"dram_copy", "B/s", 3e12, 2.9e12, "fake", ""});
    return r;
  }
  Expected<std::string> toolkit() override { return std::string("Fake driver 1.0"); }
  Expected<Build> compile(const CompileRequest& req, const std::filesystem::path& path) override {
    Build b;
    b.ok = req.entry == "good";
    b.log = req.source_path.string() + ":2: " + (b.ok ? "" : "error") + " with " +
            req.defines.at(0).second;
    b.cubin_path = path;
    return b;
  }

 private:
  RunStatus m_status;
};

std::vector<json> serve(const std::string& requests, RunStatus status, int* rc = nullptr) {
  std::istringstream in(requests);
  std::ostringstream out;
  int code = run_worker_loop(in, out, [status]() -> Expected<std::unique_ptr<Executor>> {
    return std::make_unique<FakeExecutor>(status);
  });
  if (rc) *rc = code;
  std::vector<json> replies;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) replies.push_back(json::parse(line));
  return replies;
}

TEST(WorkerLoop, AnswersEachRequestOnOneLine) {
  std::string job = json{{"op", "run"}, {"job", to_json(sample_job())}}.dump();
  auto replies =
      serve("{\"op\":\"hello\"}\n{\"op\":\"device_info\"}\nnot json\n{\"op\":\"dance\"}\n" + job +
                "\n{\"op\":\"shutdown\"}\n{\"op\":\"hello\"}\n",
            RunStatus::ok);
  ASSERT_EQ(replies.size(), 6u);  // nothing after shutdown
  EXPECT_EQ(replies[0]["protocol"], k_protocol_version);
  EXPECT_EQ(replies[1]["device"]["name"], "Fake GPU");
  EXPECT_FALSE(replies[2]["ok"].get<bool>());
  EXPECT_NE(replies[2]["error"].get<std::string>().find("bad request"), std::string::npos);
  EXPECT_EQ(replies[3]["error"], "unknown op 'dance'");
  EXPECT_EQ(replies[4]["result"]["status"], "ok");
  EXPECT_TRUE(replies[5]["ok"].get<bool>());
}

TEST(WorkerLoop, BenchAndCeilingsTravelWithTheirRecords) {
  BenchJob job;
  job.variants = {sample_job(), sample_job()};
  job.variants[1].label = "B";
  job.options.mode = CacheMode::hot;
  job.options.rule.max_noise = 0.01;
  auto replies =
      serve(json{{"op", "bench"}, {"job", to_json(job)}}.dump() + "\n{\"op\":\"ceilings\"}\n",
            RunStatus::ok);
  ASSERT_EQ(replies.size(), 2u);
  BenchResult b = bench_result_from_json(replies[0]["result"]);
  ASSERT_EQ(b.series.size(), 2u);
  EXPECT_EQ(b.series[1].label, "B");
  EXPECT_EQ(b.series[0].samples_s, (std::vector<double>{1e-3, 2e-3}));
  EXPECT_EQ(b.series[0].throttled, (std::vector<bool>{false, true}));
  CeilingsResult c = ceilings_result_from_json(replies[1]["result"]);
  ASSERT_EQ(c.ceilings.size(), 1u);
  EXPECT_EQ(c.ceilings[0].best, 3e12);
  EXPECT_TRUE(b.series[0].verification.failed());
  EXPECT_EQ(b.series[0].verification.failed_sample, 1);
  EXPECT_EQ(b.series[0].verification.poisoned_samples, 1u);
  EXPECT_FALSE(b.series[1].verification.enabled);
  BenchOptions o = bench_options_from_json(to_json(job.options));
  EXPECT_EQ(o.mode, CacheMode::hot);
  EXPECT_EQ(o.rule.max_noise, 0.01);
  EXPECT_TRUE(o.verify_samples);
  job.options.verify_samples = false;
  EXPECT_FALSE(bench_options_from_json(to_json(job.options)).verify_samples);
}

// A backend that builds with the device's driver (OpenCL) builds in the worker.
TEST(WorkerLoop, BuildsTravelBothWays) {
  CompileRequest req;
  req.source_path = "kernel.cl";
  req.source_text = "__kernel void good() {}";
  req.entry = "good";
  req.defines = {{"BLOCK", "256"}};
  req.include_dirs = {"/problem"};
  req.solve_abi = true;
  CompileRequest back = compile_request_from_json(to_json(req));
  EXPECT_EQ(back.source_text, req.source_text);
  EXPECT_EQ(back.defines, req.defines);
  EXPECT_EQ(back.include_dirs, req.include_dirs);
  EXPECT_TRUE(back.solve_abi);
  CompileRequest bad = req;
  bad.entry = "bad";
  auto replies = serve(
      std::string(R"({"op":"toolkit"})") + "\n" +
          json{{"op", "compile"}, {"request", to_json(req)}, {"path", "/cache/m.json"}}.dump() +
          "\n" +
          json{{"op", "compile"}, {"request", to_json(bad)}, {"path", "/cache/n.json"}}.dump() +
          "\n",
      RunStatus::ok);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0]["toolkit"], "Fake driver 1.0");
  Build ok = build_from_json(replies[1]["build"]);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.cubin_path, "/cache/m.json");
  Build failed = build_from_json(replies[2]["build"]);
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.log, "kernel.cl:2: error with 256");
}

TEST(WorkerLoop, ExitsAfterAFatalResult) {
  std::string job = json{{"op", "run"}, {"job", to_json(sample_job())}}.dump();
  int rc = 0;
  auto replies = serve(job + "\n" + job + "\n", RunStatus::fault, &rc);
  ASSERT_EQ(replies.size(), 1u);  // the second job is left for a fresh worker
  EXPECT_EQ(replies[0]["result"]["status"], "fault");
  EXPECT_EQ(rc, 3);
}

TEST(WorkerLoop, NoDeviceIsAnEnvironmentRefusal) {
  std::istringstream in("{\"op\":\"device_info\"}\n");
  std::ostringstream out;
  run_worker_loop(in, out, []() -> Expected<std::unique_ptr<Executor>> {
    return Unexpected(environment_error("no CUDA driver"));
  });
  json reply = json::parse(out.str());
  EXPECT_FALSE(reply["ok"].get<bool>());
  EXPECT_EQ(reply["error"], "no CUDA driver");
  EXPECT_EQ(reply["exit_code"], 3);
}

// A real `kopt worker` process running the vector_add C++ reference: the whole path
// (spawn, protocol, dlopen, files, checksums) without a GPU.
class WorkerProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::kopt_binary()))
      GTEST_SKIP() << "kopt binary not built: " << test::kopt_binary();
  }

  RunJob reference_job(std::int64_t n) {
    SystemCommandRunner runner;
    auto lib = build_reference(runner);
    RunJob job;
    job.label = "vector_add/reference";
    job.kind = ModuleKind::cpu_library;
    job.module_path = lib;
    job.entry = "vector_add_ref";
    job.args = {ResolvedArg{"a", DType::f32, {}}, ResolvedArg{"b", DType::f32, {}},
                ResolvedArg{"c", DType::f32, {}}, ResolvedArg{"", DType::i64, n}};
    std::vector<float> a(n), b(n);
    for (std::int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = 0.5f;
    }
    auto write = [&](const char* name, const std::vector<float>& v) {
      fs::path p = m_tmp.path() / (std::string(name) + ".bin");
      EXPECT_TRUE(write_file_atomic(p, std::as_bytes(std::span(v))));
      return p;
    };
    std::size_t bytes = static_cast<std::size_t>(n) * 4;
    job.tensors = {JobTensor{"a", DType::f32, bytes, Role::input, write("a", a), {}},
                   JobTensor{"b", DType::f32, bytes, Role::input, write("b", b), {}},
                   JobTensor{"c", DType::f32, bytes, Role::output, {}, m_tmp.path() / "c.bin"}};
    m_a_checksum = hex64(checksum64(std::as_bytes(std::span(a))));
    return job;
  }

  fs::path build_reference(CommandRunner& runner);

  // A worker command that misbehaves (`first_time`, after answering hello) on its first
  // start only, then runs the real worker: the client must survive and restart it.
  std::vector<std::string> misbehaving_once(const std::string& name,
                                            const std::string& first_time) {
    fs::path script = m_tmp.path() / (name + ".sh");
    fs::path marker = m_tmp.path() / (name + ".done");
    std::ofstream(script) << "#!/bin/sh\n"
                          << "if [ ! -e " << marker << " ]; then touch " << marker << "; "
                          << "read line; echo '{\"ok\":true,\"protocol\":1}'; " << first_time
                          << "; fi\n"
                          << "exec " << test::kopt_binary() << " worker\n";
    fs::permissions(script, fs::perms::owner_all);
    return {script.string()};
  }

  WorkerOptions options(std::vector<std::string> command) {
    WorkerOptions o;
    o.command = std::move(command);
    o.job_timeout = 3000ms;
    o.start_timeout = 20000ms;
    o.log_path = m_tmp.path() / "worker.log";
    return o;
  }

  TempDir m_tmp{"kopt-worker-test"};
  std::string m_a_checksum;
};

}  // namespace
}  // namespace kopt

#include "kopt/backend/cpu_reference.hpp"

namespace kopt {
namespace {

fs::path WorkerProcess::build_reference(CommandRunner& runner) {
  auto b = build_cpu_reference(runner, test::source_dir() / "examples/vector_add/ref.cpp", {},
                               m_tmp.path() / "refs");
  EXPECT_TRUE(b && b->ok) << (b ? b->log : b.error().message);
  return b ? b->library : fs::path{};
}

TEST_F(WorkerProcess, RunsACppReferenceThroughTheRealWorker) {
  WorkerClient client(options({test::kopt_binary().string(), "worker"}));
  RunResult r = client.run(reference_job(1000));
  ASSERT_TRUE(r.ok()) << run_status_name(r.status) << ": " << r.error;
  EXPECT_EQ(r.input_checksums.at("a"), m_a_checksum);
  auto c = read_binary_file(m_tmp.path() / "c.bin");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->size(), 4000u);
  float c7;
  std::memcpy(&c7, c->data() + 7 * 4, 4);
  EXPECT_EQ(c7, 7.5f);
  EXPECT_EQ(client.starts(), 1);
}

TEST_F(WorkerProcess, AHangingWorkerIsKilledAndReplaced) {
  // First job goes to a worker that never answers; the client must time out, kill it,
  // and start a fresh one for the next job.
  WorkerClient client(options(misbehaving_once("hang", "exec sleep 30")));
  RunResult hung = client.run(reference_job(100));
  EXPECT_EQ(hung.status, RunStatus::timeout);
  EXPECT_NE(hung.error.find("watchdog"), std::string::npos) << hung.error;
  RunResult next = client.run(reference_job(100));
  EXPECT_TRUE(next.ok()) << next.error;
  EXPECT_EQ(client.starts(), 2);
}

// A bench's watchdog allows for kopt's own work with the tensors (100 MB/s of them, twice), as a
// run's does: a worker slow to answer over 1 GB of tensors is not a hung kernel. Without the
// allowance this cap is 8 s (5 s for the minimum samples, the 3 s job timeout).
TEST_F(WorkerProcess, ABenchOfLargeTensorsIsGivenTimeToMoveThem) {
  WorkerClient client(options(misbehaving_once("slow", "sleep 9")));
  BenchJob job;
  job.variants = {reference_job(1000)};
  job.variants[0].tensors[0].bytes = 1'000'000'000;  // as the watchdog sees it
  job.options.rule.max_time_s = 0.01;
  job.options.warmup_s = 0;
  BenchResult r = client.bench(job);
  EXPECT_NE(r.status, RunStatus::timeout) << r.error;
  EXPECT_EQ(r.error.find("watchdog"), std::string::npos) << r.error;
}

TEST_F(WorkerProcess, ACrashingWorkerIsAFailedResultWithItsLastWords) {
  WorkerClient client(options(
      misbehaving_once("crash", "read line; echo 'segfault in candidate' >&2; kill -SEGV $$")));
  RunResult crashed = client.run(reference_job(100));
  EXPECT_EQ(crashed.status, RunStatus::crash);
  EXPECT_NE(crashed.error.find("signal 11"), std::string::npos) << crashed.error;
  EXPECT_NE(crashed.error.find("segfault in candidate"), std::string::npos) << crashed.error;
  RunResult next = client.run(reference_job(100));
  EXPECT_TRUE(next.ok()) << next.error;
  EXPECT_EQ(client.starts(), 2);
}

TEST_F(WorkerProcess, AReferenceThatFailsIsAResultNotACrash) {
  RunJob job = reference_job(10);
  job.entry = "no_such_symbol";
  WorkerClient client(options({test::kopt_binary().string(), "worker"}));
  RunResult r = client.run(job);
  EXPECT_EQ(r.status, RunStatus::load_failed);
  EXPECT_NE(r.error.find("no_such_symbol"), std::string::npos);
}

TEST_F(WorkerProcess, NoGpuIsReportedAsAnEnvironmentError) {
  if (auto driver = cuda::probe_driver(); driver && driver->device_count > 0)
    GTEST_SKIP() << "this machine has a CUDA device: the worker would find it";
  WorkerClient client(options({test::kopt_binary().string(), "worker"}));
  auto info = client.device_info();
  ASSERT_FALSE(info) << "a device without a driver: " << info->name;
  EXPECT_EQ(info.error().kind, ErrorKind::environment);
  EXPECT_FALSE(info.error().message.empty());
}

TEST(WorkerClient, AWriteTheMachineRefusedIsNoJobsVerdict) {
  EXPECT_TRUE(machine_out_of_room("LLVM ERROR: IO failure on output stream: File too large"));
  EXPECT_TRUE(machine_out_of_room("write failed: /tmp/x.bin: No space left on device"));
  EXPECT_TRUE(machine_out_of_room("Disk quota exceeded"));
  EXPECT_FALSE(machine_out_of_room("an illegal memory access was encountered"));
  EXPECT_FALSE(machine_out_of_room(""));
}

}  // namespace
}  // namespace kopt
