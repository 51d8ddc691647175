// Device tests (label "gpu"): every example passes `kopt check`, and the fault kernels are
// survived. They skip, saying why, where there is no usable CUDA driver and device.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

nlohmann::json check_json(const std::vector<std::string>& extra, int& rc) {
  std::vector<std::string> argv = {test::kopt_binary().string(), "check", "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  SystemCommandRunner runner;
  CommandResult r = runner.run(argv, 600s);
  rc = r.exit_code;
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return {};
  }
}

class ExampleCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleCheck, EveryKernelPasses) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  auto j = check_json({(test::source_dir() / "examples" / GetParam()).string()}, rc);
  EXPECT_EQ(rc, 0) << j.dump(2);
  ASSERT_TRUE(j.contains("kernels"));
  for (const auto& k : j["kernels"]) EXPECT_EQ(k["status"], "passed") << k.dump(2);
  // 1, 2, the wide seed 4 (where an input has a normal or uniform init), the secret one
  EXPECT_EQ(j["seeds"].size(), j["wide_seed"].is_null() ? 3u : 4u);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleCheck,
                         ::testing::Values("vector_add", "softmax", "rmsnorm", "transpose",
                                           "reduction", "gemm_f32"));

TEST(ReferenceCache, TheReferenceRunsOnceThenComesFromTheCache) {
  KOPT_SKIP_WITHOUT_GPU();
  TempDir cache("kopt-gpu-cache");
  ::setenv("KOPT_CACHE_DIR", cache.path().c_str(), 1);
  std::vector<std::string> args = {(test::source_dir() / "examples/softmax").string(), "--kernel",
                                   "tuned", "--seeds", "2"};
  int rc = -1;
  auto first = check_json(args, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(first["reference"]["cached"].get<bool>());
  auto second = check_json(args, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(second["reference"]["cached"].get<bool>());
  EXPECT_TRUE(second["kernels"][0]["build"]["from_cache"].get<bool>());
  auto other_seed =
      check_json({args[0], "--kernel", "tuned", "--seeds", "1", "--first-seed", "9"}, rc);
  EXPECT_FALSE(other_seed["reference"]["cached"].get<bool>());
  ::unsetenv("KOPT_CACHE_DIR");
}

TEST(FaultIsolation, FaultsAndHangsAreFailedCandidatesAndTheCommandGoesOn) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  auto j = check_json(
      {(test::source_dir() / "tests/fixtures/problems/faults").string(), "--timeout", "5"}, rc);
  EXPECT_EQ(rc, 1);  // candidates failed; the tool did not
  ASSERT_TRUE(j.contains("kernels")) << j.dump(2);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& k : j["kernels"]) by_name[k["kernel"]] = k;
  for (const char* good : {"good_first", "good_after_oob", "good_after_trap", "good_after_hang"})
    EXPECT_EQ(by_name[good]["status"], "passed") << good << ": " << by_name[good].dump(2);
  EXPECT_EQ(by_name["out_of_bounds"]["status"], "run_failed");
  EXPECT_EQ(by_name["out_of_bounds"]["seeds"][0]["status"], "fault");
  EXPECT_NE(by_name["out_of_bounds"]["error"].get<std::string>().find("ILLEGAL_ADDRESS"),
            std::string::npos)
      << by_name["out_of_bounds"]["error"];
  EXPECT_EQ(by_name["trap"]["status"], "run_failed");
  EXPECT_EQ(by_name["trap"]["seeds"][0]["status"], "fault");
  EXPECT_EQ(by_name["hang"]["status"], "run_failed");
  EXPECT_EQ(by_name["hang"]["seeds"][0]["status"], "timeout");
  EXPECT_EQ(by_name["wrong"]["status"], "mismatch");
  EXPECT_EQ(by_name["skips_elements"]["status"], "mismatch");
  EXPECT_GT(by_name["skips_elements"]["seeds"][0]["outputs"][0]["unwritten"].get<int>(), 0);
  EXPECT_GE(j["worker_starts"].get<int>(), 4);  // first worker + one per fault/hang
}

}  // namespace
}  // namespace kopt
