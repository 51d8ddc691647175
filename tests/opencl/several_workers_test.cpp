// Several workers on OpenCL devices (label "opencl"): optimize --gpus over two PoCL devices
// (POCL_DEVICES="pthread pthread"), and the worker choices that cannot be. The Ray cluster
// itself is tests/ray/cluster_test.py (label ray).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "small_examples.hpp"

namespace kopt {
namespace {

class SeveralWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1);
    ::setenv("KOPT_EXPERIENCE_DB", (m_dir.path() / "experience.db").c_str(), 1);
    if (const char* d = std::getenv("POCL_DEVICES")) m_saved = d;
  }
  void TearDown() override {
    ::unsetenv("KOPT_CACHE_DIR");
    ::unsetenv("KOPT_EXPERIENCE_DB");
    m_saved ? ::setenv("POCL_DEVICES", m_saved->c_str(), 1) : ::unsetenv("POCL_DEVICES");
  }
  static std::string softmax() { return (test::source_dir() / "examples/softmax").string(); }
  static nlohmann::json kopt(std::vector<std::string> args, int& rc) {
    args.insert(args.begin(), {"--backend", "opencl"});
    return test::kopt_json(std::move(args), rc);
  }
  // PoCL with two devices (POCL_DEVICES="pthread pthread"); false where they are not there.
  static bool two_devices() {
    ::setenv("POCL_DEVICES", "pthread pthread", 1);
    int rc = -1;
    return kopt({"env"}, rc)["opencl"]["devices"].size() >= 2;
  }
  TempDir m_dir{"kopt-workers-test"};
  std::optional<std::string> m_saved;
};

// A round's branches are measured one per worker, each evaluation names its worker, and the
// run ends as a run on one device does. (The space screen, which would leave fewer branches,
// is tune's and spreads its batches the same way: tests of tune cover it.)
TEST_F(SeveralWorkers, OptimizeMeasuresARoundsBranchesOnBothDevices) {
  KOPT_SKIP_WITHOUT_OPENCL();
  if (!two_devices()) GTEST_SKIP() << "fewer than two OpenCL devices, even with POCL_DEVICES";
  int rc = -1;
  std::string run = (m_dir.path() / "run").string();
  auto j = kopt(test::with_small_softmax(
                    {"optimize", softmax(), "--gpus", "all", "--run", run, "--iterations", "1",
                     "--branches", "4", "--max-time", "0.3", "--no-experience", "--no-sanitize",
                     // no space screen: its points are tune's, and this is about the branches
                     "--space-budget", "0"}),
                rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  std::set<std::string> workers;
  for (const auto& [key, e] : j["evaluations"].items()) {
    std::string d = e.value("device", "");
    workers.insert(d.substr(0, d.find(' ', 7)));  // "worker 0"
  }
  EXPECT_TRUE(workers.count("worker 0") && workers.count("worker 1")) << j["evaluations"].dump(2);
  ASSERT_GE(j["versions"].size(), 2u);
}

// bench's variants are measured one per worker, each row naming it; a comparison stays on one.
TEST_F(SeveralWorkers, BenchMeasuresItsVariantsOnePerDevice) {
  KOPT_SKIP_WITHOUT_OPENCL();
  if (!two_devices()) GTEST_SKIP() << "fewer than two OpenCL devices, even with POCL_DEVICES";
  int rc = -1;
  auto j = kopt(
      test::with_small_softmax({"bench", softmax(), "--gpus", "all", "--max-time", "0.3"}), rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  std::set<std::string> workers;
  for (const auto& v : j["variants"]) {
    EXPECT_EQ(v["status"], "ok") << v.dump(2);
    std::string d = v.value("device", "");
    workers.insert(d.substr(0, d.find(' ', 7)));
  }
  EXPECT_EQ(workers, (std::set<std::string>{"worker 0", "worker 1"})) << j["variants"].dump(2);
  auto ab = kopt(test::with_small_softmax({"bench", softmax(), "--gpus", "all", "--kernel", "tuned",
                                           "--vs", "VEC=1", "--max-time", "0.3"}),
                 rc);
  ASSERT_EQ(rc, 0) << ab.dump(2);
  EXPECT_TRUE(ab["comparison"].is_object());
  for (const auto& v : ab["variants"])
    EXPECT_FALSE(v.contains("device")) << "a comparison runs on one worker";
}

// --gpus chooses this host's devices, --cluster the cluster's: not both; an unknown cluster
// kind or an empty address is bad input, said before anything starts.
TEST_F(SeveralWorkers, WorkerChoicesThatCannotBeAreBadInput) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  auto both = kopt({"tune", softmax(), "--gpus", "0", "--cluster", "ray"}, rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(both["error"].get<std::string>().find("--gpus"), std::string::npos) << both.dump(2);
  auto spark = kopt({"tune", softmax(), "--cluster", "spark://host:7077"}, rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(spark["error"].get<std::string>().find("expected ray"), std::string::npos)
      << spark.dump(2);
  auto empty = kopt(
      {"optimize", softmax(), "--cluster", "ray:", "--run", (m_dir.path() / "r").string()}, rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(empty["error"].get<std::string>().find("an address"), std::string::npos)
      << empty.dump(2);
  EXPECT_FALSE(std::filesystem::exists(m_dir.path() / "r" / "run.json"));
}

}  // namespace
}  // namespace kopt
