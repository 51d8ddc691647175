// The OpenCL backend on whatever OpenCL device is here (label "opencl"): PoCL on the CPU in
// CI, NVIDIA's OpenCL on the GPU machine. Every command goes through the real kopt binary
// with --backend opencl, so the worker, the driver and the files are the real ones.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>

#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "small_examples.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class OpenclBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1);
    ::setenv("KOPT_EXPERIENCE_DB", (m_dir.path() / "experience.db").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KOPT_CACHE_DIR");
    ::unsetenv("KOPT_EXPERIENCE_DB");
  }
  static std::string example(const char* name) {
    return (test::source_dir() / "examples" / name).string();
  }
  static nlohmann::json kopt(std::vector<std::string> args, int& rc) {
    args.insert(args.begin(), {"--backend", "opencl"});
    return test::kopt_json(std::move(args), rc);
  }
  TempDir m_dir{"kopt-opencl-test"};
};

class OpenclExample : public OpenclBackend, public ::testing::WithParamInterface<const char*> {};

TEST_P(OpenclExample, EveryPortedKernelPassesAgainstTheCpuReference) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto j = kopt({"check", example(GetParam()), "--seeds", "2"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["device"]["backend"], "opencl");
  EXPECT_EQ(j["arch"], "opencl");
  ASSERT_EQ(j["kernels"].size(), 2u);
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k["status"], "passed") << k.dump(2);
    EXPECT_TRUE(k["source"].get<std::string>().ends_with(".cl"));
    // and the wide seed, where an input has a normal or uniform init (transpose's is arange)
    EXPECT_EQ(k["seeds"].size(), j["wide_seed"].is_null() ? 2u : 3u);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, OpenclExample,
                         ::testing::Values("vector_add", "softmax", "transpose", "reduction"));

// The last seed of kopt check is drawn at run time (a kernel cannot carry answers for it), its
// reference computed afresh and never cached; --no-secret-seed gives the predictable seeds.
TEST_F(OpenclBackend, TheLastSeedIsSecretAndNeverCached) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto first = kopt({"check", example("vector_add"), "--seeds", "2"}, rc);
  ASSERT_EQ(rc, 0) << first.dump(2);
  ASSERT_EQ(first["seeds"].size(), 3u);
  EXPECT_EQ(first["seeds"][0], 1u);
  EXPECT_EQ(first["seeds"][1], 3u);  // the wide seed: first + seeds, inputs 100x wider
  EXPECT_EQ(first["wide_seed"], 3u);
  std::uint64_t secret = first["secret_seed"];
  EXPECT_EQ(first["seeds"][2], secret);
  EXPECT_GE(secret, std::uint64_t{1} << 62);
  for (const auto& k : first["kernels"]) EXPECT_EQ(k["seeds"][2]["seed"], secret);
  auto second = kopt({"check", example("vector_add"), "--seeds", "2"}, rc);
  ASSERT_EQ(rc, 0) << second.dump(2);
  EXPECT_NE(second["secret_seed"], secret);                // drawn again
  EXPECT_TRUE(second["reference"]["cached"].get<bool>());  // seed 1 came from the cache
  // Seed 1's and the wide seed's references at the declared shape, seed 1's at vector_add's
  // [check] dims and at each boundary shape: the secret ones are not kept.
  std::size_t cached = 0, boundary = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator(m_dir.path() / "cache" / "references"))
    ++cached;
  for (const auto& c : first["shape_checks"]) boundary += c["origin"] != "[check] dims";
  EXPECT_EQ(boundary, 4u) << "tails and ones, for each of the two kernels' constraints";
  EXPECT_EQ(cached, 3u + boundary);
  auto plain = kopt({"check", example("vector_add"), "--seeds", "2", "--no-secret-seed"}, rc);
  ASSERT_EQ(rc, 0) << plain.dump(2);
  EXPECT_EQ(plain["seeds"], nlohmann::json::array({1, 2, 3}));
  EXPECT_TRUE(plain["secret_seed"].is_null());
}

// A cached reference output cut short (a disk that filled while it was kept) is computed
// again, never compared with: the kernels pass, and nothing reads as a mismatch.
TEST_F(OpenclBackend, ACachedReferenceCutShortIsMadeAgain) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto first = kopt({"check", example("vector_add"), "--seeds", "1"}, rc);
  ASSERT_EQ(rc, 0) << first.dump(2);
  std::size_t cut = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(m_dir.path() / "cache" / "references"))
    if (e.is_regular_file() && e.path().extension() == ".bin") {
      std::filesystem::resize_file(e.path(), e.file_size() / 2);
      ++cut;
    }
  ASSERT_GT(cut, 0u);
  auto second = kopt({"check", example("vector_add"), "--seeds", "1"}, rc);
  ASSERT_EQ(rc, 0) << second.dump(2);
  EXPECT_FALSE(second["reference"]["cached"].get<bool>()) << "made again";
  for (const auto& k : second["kernels"]) EXPECT_EQ(k["status"], "passed") << k.dump(2);
}

TEST_F(OpenclBackend, BenchTimesWithTheSharedScheduleAndAFlush) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto j = kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--vs", "VEC=1",
                 "--max-time", "2", "--min-time", "0.05"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["variants"].size(), 2u);
  // What kopt guarantees whatever the load: the minimum sample count, or the time cap as the
  // stop reason (a loaded CPU reaches the cap first).
  for (const auto& v : j["variants"]) {
    EXPECT_TRUE(v["series"]["samples_s"].size() >= 10u || v["series"]["stop"] == "time_cap")
        << v.dump(2);
    EXPECT_EQ(v["status"], "ok") << v.dump(2);
  }
  // A CPU device (PoCL) evicts the sample's tensors' lines, 3 x n floats; a GPU rewrites a
  // buffer of twice its cache.
  if (j["device"]["device_type"] == "cpu") {
    EXPECT_EQ(j["flush_method"], "evict");
    EXPECT_EQ(j["flush_bytes"], 3 * 16777216 * 4);
  } else {
    EXPECT_EQ(j["flush_method"], "write");
    EXPECT_GT(j["flush_bytes"].get<double>(), 0);
  }
  ASSERT_TRUE(j["comparison"].is_object()) << j.dump(2);  // a verdict, inconclusive or not
  EXPECT_FALSE(j["comparison"]["verdict"].get<std::string>().empty());
}

// A tuned kernel against a library-like one with no params (the wgmma GEMM against cuBLAS):
// --set applies to the side whose params it names, and a name neither has is still a typo.
TEST_F(OpenclBackend, BenchVsAKernelWithoutTheParamsOfTheFirst) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto j = kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--set", "VEC=2",
                 "--vs-kernel", "naive", "--max-time", "1", "--min-time", "0.05"},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_EQ(j["variants"].size(), 2u);
  EXPECT_EQ(j["variants"][0]["params"]["VEC"], 2) << j["variants"][0].dump(2);
  EXPECT_TRUE(j["variants"][1]["params"].empty()) << j["variants"][1].dump(2);
  ASSERT_TRUE(j["comparison"].is_object()) << j.dump(2);
  kopt({"bench", example("vector_add"), "--kernel", "vectorized", "--set", "VECC=2", "--vs-kernel",
        "naive"},
       rc);
  EXPECT_EQ(rc, 2);
}

TEST_F(OpenclBackend, CeilingsAreMeasuredOnTheDevice) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto j = kopt({"ceilings"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  std::map<std::string, double> best;
  for (const auto& c : j["result"]["ceilings"]) best[c["name"]] = c["best"];
  EXPECT_GT(best["dram_copy"], 1e8);  // 0.1 GB/s: any real device streams faster
  EXPECT_GT(best["fp32_fma"], 1e8);
}

TEST_F(OpenclBackend, ABuildErrorShowsTheDriversLogAtTheUsersLine) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = m_dir.path() / "broken";
  fs::copy(example("vector_add"), dir);
  std::ofstream(dir / "kernel_naive.cl")
      << "__kernel void vector_add_naive(__global const float* a, __global const "
         "float* b, __global float* c, int n) {\n"
         "  int i = get_global_id(0);\n"
         "  if (i < n) c[i] = a[i] + b[i] + not_declared;\n"
         "}\n";
  int rc = -1;
  auto j = kopt({"check", dir.string(), "--kernel", "naive"}, rc);
  EXPECT_EQ(rc, 1);
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_EQ(j["kernels"][0]["status"], "compile_failed");
  std::string log = j["kernels"][0]["build"]["log"];
  EXPECT_NE(log.find("kernel_naive.cl:3:"), std::string::npos) << log;
  EXPECT_NE(log.find("not_declared"), std::string::npos) << log;
}

TEST_F(OpenclBackend, NoPlatformSaysWhatToInstallAndExits3) {
  fs::create_directories(m_dir.path() / "no-vendors");
  // OCL_ICD_FILENAMES names drivers beside the vendors folder (the GPU machine sets it).
  const char* filenames = std::getenv("OCL_ICD_FILENAMES");
  std::optional<std::string> saved =
      filenames ? std::optional<std::string>(filenames) : std::nullopt;
  ::unsetenv("OCL_ICD_FILENAMES");
  ::setenv("OCL_ICD_VENDORS", (m_dir.path() / "no-vendors").c_str(), 1);
  int rc = -1;
  auto j = kopt({"check", example("vector_add")}, rc);
  ::unsetenv("OCL_ICD_VENDORS");
  if (saved) ::setenv("OCL_ICD_FILENAMES", saved->c_str(), 1);
  EXPECT_EQ(rc, 3) << j.dump(2);
  std::string error = j.value("error", "");
  EXPECT_TRUE(error.find("pocl-opencl-icd") != std::string::npos ||
              error.find("libOpenCL") != std::string::npos)
      << error;
}

// Some drivers cut OCL_ICD_FILENAMES down in the process that loads them; kopt puts it back,
// or the workers and tools it starts would no longer see those drivers' devices.
TEST_F(OpenclBackend, ListingDevicesLeavesTheIcdVariablesAsTheyWere) {
  // A value the driver would cut down: the ICD PoCL registered, named directly.
  std::string icd;
  if (std::ifstream in("/etc/OpenCL/vendors/pocl.icd"); in) std::getline(in, icd);
  if (icd.empty()) GTEST_SKIP() << "no /etc/OpenCL/vendors/pocl.icd to name the driver with";
  const char* saved = std::getenv("OCL_ICD_FILENAMES");
  std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  const std::string set_to = icd + ":" + icd;  // a list, as users write it
  ::setenv("OCL_ICD_FILENAMES", set_to.c_str(), 1);
  auto devices = opencl::list_opencl_devices();
  const char* after = std::getenv("OCL_ICD_FILENAMES");
  std::string seen = after ? after : "(unset)";
  if (restore)
    ::setenv("OCL_ICD_FILENAMES", restore->c_str(), 1);
  else
    ::unsetenv("OCL_ICD_FILENAMES");
  EXPECT_TRUE(devices) << devices.error().to_string();
  EXPECT_EQ(seen, set_to);
}

TEST_F(OpenclBackend, SassIsRefusedWithTheReason) {
  int rc = -1;
  auto j = kopt({"sass", example("vector_add")}, rc);
  EXPECT_EQ(rc, 3);
  EXPECT_NE(j.value("error", "").find("needs a CUDA device"), std::string::npos) << j.dump(2);
}

// The engine end to end: check, time, a timing-only analysis, branches, ablation, reports,
// and a resume, all through the OpenCL device.
TEST_F(OpenclBackend, OptimizeRunsEndToEndAndResumes) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  std::string run = (m_dir.path() / "run").string();
  // n = 2^20 (three tensors of 4 MiB): at the default 2^24 this test took 95-159 s on 2 cores.
  auto j = kopt({"optimize", example("vector_add"), "--dim", "n=1048576", "--iterations", "2",
                 "--branches", "3", "--max-time", "0.3", "--run", run},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  ASSERT_GE(j["versions"].size(), 1u);
  EXPECT_EQ(j["versions"][0]["kernel"], "naive");
  EXPECT_EQ(j["status"], "finished");
  for (const char* f : {"report.md", "benchmark.md", "report.html", "target.md"})
    EXPECT_TRUE(fs::exists(fs::path(run) / f)) << f;
  // What the loop guarantees whatever the load: an iteration with its hypothesis, or a stop
  // with its reason before one (roofs measured on a loaded CPU are low, and the naive kernel
  // can sit near them: a reasoned stop, not a failure).
  std::string stop = j["stop_reason"];
  if (j["versions"].size() == 1) {
    EXPECT_TRUE(stop.rfind("near_peak", 0) == 0 || stop.rfind("at_roof", 0) == 0 ||
                stop.rfind("target met", 0) == 0)
        << stop;
  } else {
    std::string hypothesis = *read_text_file(fs::path(run) / "v1/hypothesis.md");
    EXPECT_NE(hypothesis.find("no counters"), std::string::npos) << hypothesis;
  }
  auto again = kopt({"optimize", example("vector_add"), "--dim", "n=1048576", "--iterations", "3",
                     "--branches", "3", "--max-time", "0.3", "--run", run, "--resume"},
                    rc);
  ASSERT_EQ(rc, 0) << again.dump(2);
  EXPECT_GE(again["versions"].size(), j["versions"].size());
}

// A reference that refuses the wide seed's inputs (a domain it checks) is the problem's limit:
// the check goes on without that seed and says why, it does not fail the command.
TEST_F(OpenclBackend, AReferenceThatRefusesTheWideSeedLeavesANoteNotAnError) {
  KOPT_SKIP_WITHOUT_OPENCL();
  fs::path dir = m_dir.path() / "picky";
  fs::create_directories(dir);
  fs::path hacks = test::source_dir() / "tests/hacks";
  std::string toml = *read_text_file(hacks / "lower_precision/kopt.toml");
  toml.replace(toml.find("../_y_2x/ref.cpp"), 16, "ref.cpp");
  toml.replace(toml.find("role = \"input\""), 14,
               "role = \"input\"\ninit = { kind = \"uniform\", low = -1.0, high = 1.0 }");
  ASSERT_TRUE(write_text_atomic(dir / "kopt.toml", toml));
  ASSERT_TRUE(write_text_atomic(dir / "ref.cpp",
                                "#include <cstdint>\n"
                                "extern \"C\" int ref(void** args) {  // y = 2 x for |x| <= 10\n"
                                "  const float* x = static_cast<const float*>(args[0]);\n"
                                "  float* y = static_cast<float*>(args[1]);\n"
                                "  std::int64_t n = *static_cast<const std::int64_t*>(args[2]);\n"
                                "  for (std::int64_t i = 0; i < n; ++i) {\n"
                                "    if (x[i] > 10 || x[i] < -10) return 1;\n"
                                "    y[i] = 2.0f * x[i];\n"
                                "  }\n"
                                "  return 0;\n"
                                "}\n"));
  for (const char* f : {"honest.cl", "cheat.cl"})
    fs::copy_file(hacks / "lower_precision" / f, dir / f);
  int rc = -1;
  auto j = kopt({"check", dir.string(), "--kernel", "honest"}, rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_TRUE(j["wide_seed"].is_null());
  EXPECT_NE(
      j["wide_seed_note"].get<std::string>().find("no wide seed: the reference failed on seed 4"),
      std::string::npos)
      << j["wide_seed_note"];
  EXPECT_EQ(j["seeds"].size(), 3u);  // 1, 2 and the secret one
}

TEST_F(OpenclBackend, OneAgentDrivenIterationWithAnOpenclBranch) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  std::string run = (m_dir.path() / "agent").string();
  // softmax: its naive kernel is far from the roof on any CPU (vector_add's naive one can meet
  // the target there, and the loop then stops before an iteration opens).
  auto opened = kopt({"iter", "open", run, "--problem", example("softmax")}, rc);
  ASSERT_EQ(rc, 0) << opened.dump(2);
  ASSERT_FALSE(opened["open"].is_null()) << opened.dump(2);
  std::string kernel = (test::source_dir() / "examples/softmax/kernel.cl").string();
  kopt({"iter", "branch", run, "--file", kernel, "--kernel", "tuned", "--set", "VEC=4", "--method",
        "vectorized_global_loads"},
       rc);
  ASSERT_EQ(rc, 0);
  auto closed = kopt({"iter", "close", run, "--max-time", "0.3"}, rc);
  ASSERT_EQ(rc, 0) << closed.dump(2);
  ASSERT_EQ(closed["versions"].size(), 2u);
  EXPECT_NE(closed["versions"][1]["outcome"], "failed") << closed["versions"][1].dump(2);
}

// kopt tune on the OpenCL device: batches screened, the promising ones confirmed, the
// champion a confirmed measurement, the JSON exactly the documented fields.
// Without --strategy, a space that fits the budget is searched whole: three points of VEC with
// a budget of 30 are not "3/30 screened at random" (issue: a 24-point space read "24/30").
TEST_F(OpenclBackend, TuneSearchesASpaceThatFitsTheBudgetExhaustively) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  const fs::path out = m_dir.path() / "champion.json";
  auto j = kopt({"tune", example("softmax"), "--set", "BLOCK=256", "--set", "USE_SHFL=1",
                 "--screen-samples", "5", "--max-time", "0.3", "--out", out.string()},
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["search"]["strategy"], "exhaustive") << j["search"].dump(2);
  EXPECT_EQ(j["search"]["evaluations"], 3);
  // The champion is kept on disk, with the command that runs it again (issue: tune wrote
  // nothing and printed no --set line).
  EXPECT_EQ(j["champion_file"], out.string());
  auto file = read_text_file(out);
  ASSERT_TRUE(file);
  auto kept = nlohmann::json::parse(*file);
  EXPECT_EQ(kept["champion"]["params"], j["champion"]["point"]);
  EXPECT_EQ(kept["backend"], "opencl");
  EXPECT_EQ(kept["reuse_command"], j["reuse_command"]);
  EXPECT_NE(j["reuse_command"].get<std::string>().find("--set BLOCK=256"), std::string::npos);
}

TEST_F(OpenclBackend, TuneScreensInBatchesAndConfirmsTheChampion) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto j = kopt(
      test::with_small_softmax({"tune", example("softmax"), "--strategy", "exhaustive", "--budget",
                                "6", "--batch", "3", "--screen-samples", "5", "--max-time", "0.3",
                                "--out", (m_dir.path() / "c.json").string()}),
      rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["search"]["evaluations"], 6);
  EXPECT_EQ(j["search"]["history"][0]["point"], j["default_point"]);  // the start point first
  ASSERT_TRUE(j["champion"].is_object()) << j.dump(2);
  EXPECT_TRUE(j["champion"]["ok"].get<bool>());
  EXPECT_GT(j["champion"]["summary"]["median"].get<double>(), 0);
  ASSERT_GE(j["confirmed"].size(), 1u);
  bool champion_confirmed = false;
  for (const auto& c : j["confirmed"]) champion_confirmed |= c["point"] == j["champion"]["point"];
  EXPECT_TRUE(champion_confirmed);
  for (const auto& e : j["search"]["history"]) {
    if (e["ok"].get<bool>()) {
      EXPECT_EQ(e["cost_interval"].size(), 2u) << e.dump();
    }
  }
  EXPECT_GT(j["times"]["screening"]["measure_s"].get<double>(), 0);
  EXPECT_GT(j["configs_per_min"].get<double>(), 0);
  auto docs =
      nlohmann::json::parse(*read_text_file(test::source_dir() / "docs/json/commands.json"));
  std::set<std::string> documented, printed;
  for (auto it = docs["tune"]["fields"].begin(); it != docs["tune"]["fields"].end(); ++it)
    documented.insert(it.key());
  for (auto it = j.begin(); it != j.end(); ++it) printed.insert(it.key());
  EXPECT_EQ(printed, documented);
}

// --gpus on two OpenCL devices (PoCL gives two with POCL_DEVICES="pthread pthread"): the
// screening is split over both, every evaluation says which one, the champion is confirmed
// on the first; a device that does not exist is bad input.
TEST_F(OpenclBackend, TuneOverTwoDevicesSplitsTheScreening) {
  KOPT_SKIP_WITHOUT_OPENCL();
  const char* before = std::getenv("POCL_DEVICES");
  std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  ::setenv("POCL_DEVICES", "pthread pthread", 1);
  int rc = -1;
  auto env = kopt({"env"}, rc);
  if (env["opencl"]["devices"].size() < 2) {
    saved ? ::setenv("POCL_DEVICES", saved->c_str(), 1) : ::unsetenv("POCL_DEVICES");
    GTEST_SKIP() << "fewer than two OpenCL devices here, even with POCL_DEVICES";
  }
  auto j = kopt(test::with_small_softmax({"tune", example("softmax"), "--gpus", "all", "--strategy",
                                          "exhaustive", "--budget", "8", "--batch", "4",
                                          "--screen-samples", "5", "--max-time", "2", "--out",
                                          (m_dir.path() / "c.json").string()}),
                rc);
  auto bad = kopt({"tune", example("softmax"), "--gpus", "0,7"}, rc);
  int bad_rc = rc;
  saved ? ::setenv("POCL_DEVICES", saved->c_str(), 1) : ::unsetenv("POCL_DEVICES");
  ASSERT_TRUE(j.contains("gpus")) << j.dump(2);
  ASSERT_EQ(j["gpus"].size(), 2u);
  std::set<int> used;
  for (const auto& e : j["search"]["history"]) used.insert(e["gpu"].get<int>());
  EXPECT_EQ(used, (std::set<int>{0, 1}));
  ASSERT_TRUE(j["champion"].is_object()) << j.dump(2);
  EXPECT_TRUE(j["champion"]["ok"].get<bool>());
  EXPECT_EQ(bad_rc, 2);
  EXPECT_NE(bad["error"].get<std::string>().find("no device 7"), std::string::npos) << bad.dump(2);
}

// A batch is checked inside its timing job: a wrong point is wrong with the reference's words,
// a point whose kernel kills the worker fails alone (the batch is checked point by point,
// then timed again), and the good points are timed all the same.
TEST_F(OpenclBackend, TuneChecksInsideTheTimingJobAndIsolatesACrash) {
  KOPT_SKIP_WITHOUT_OPENCL();
  const std::string problem = (test::source_dir() / "tests/fixtures/problems/tune_faults").string();
  int rc = -1;
  auto j = kopt(
      {"tune", problem, "--strategy", "exhaustive", "--budget", "8", "--batch", "8",
       "--screen-samples", "5", "--max-time", "0.3", "--out", (m_dir.path() / "c.json").string()},
      rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  for (const auto& e : j["search"]["history"]) {
    int mode = e["point"]["MODE"].get<int>();
    std::string failure = e["failure"].get<std::string>();
    bool expected = mode == 0 || mode == 3 ? e["ok"].get<bool>()
                    : mode == 1            ? failure.starts_with("wrong")
                                           : failure.find("crash") != std::string::npos;
    EXPECT_TRUE(expected) << e.dump();
  }
  ASSERT_TRUE(j["champion"].is_object());
  int champion_mode = j["champion"]["point"]["MODE"].get<int>();
  EXPECT_TRUE(champion_mode == 0 || champion_mode == 3);
  // Without a crash in the batch, the wrong point is caught inside the timing job itself.
  auto k = kopt(
      {"tune", problem, "--strategy", "exhaustive", "--budget", "2", "--batch", "2",
       "--screen-samples", "5", "--max-time", "0.3", "--out", (m_dir.path() / "c.json").string()},
      rc);
  ASSERT_EQ(k["search"]["history"].size(), 2u) << k.dump(2);
  std::string wrong = k["search"]["history"][1]["failure"].get<std::string>();
  EXPECT_NE(wrong.find("in the timing job"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("differ from the reference"), std::string::npos) << wrong;
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// A kernel that writes the declared n into itself is right at that shape only: [check] dims
// makes kopt check every passing kernel at another shape too (tests/fixtures/problems/shapes).
TEST_F(OpenclBackend, AShapeHardCodedIntoAKernelIsCaughtAtTheOtherShape) {
  KOPT_SKIP_WITHOUT_OPENCL();
  std::string shapes = (test::source_dir() / "tests/fixtures/problems/shapes").string();
  int rc = -1;
  auto j = kopt({"check", shapes, "--seeds", "2"}, rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  EXPECT_EQ(j["other_shape"]["dims"], "n=65536");
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["status"], "passed") << j["kernels"][0].dump(2);
  EXPECT_EQ(j["kernels"][1]["status"], "mismatch");
  std::string error = j["kernels"][1]["error"];
  EXPECT_NE(error.find("at the other shape (n=65536, [check] dims)"), std::string::npos) << error;
  EXPECT_NE(error.find("a shape hard-coded into it"), std::string::npos) << error;
  auto unchecked = kopt({"check", shapes, "--seeds", "2", "--no-other-shape"}, rc);
  EXPECT_EQ(rc, 0) << unchecked.dump(2);  // at the declared shape both are right
}

}  // namespace
}  // namespace kopt
