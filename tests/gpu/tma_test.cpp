// A Hopper kernel that takes a TMA tensor map (label "gpu"): the tma_copy fixture, built for
// sm_90a, passes its check at the declared shape and at [check] dims (neither a multiple of
// the box), at several boxes, and is timed; an arch it cannot run on (--arch sm_80) is a
// failed build that names kopt.toml's line and field; a shape whose rows TMA cannot stride
// is a failed launch, not a crash.
#include <gtest/gtest.h>

#include "gpu_skip.hpp"
#include "kopt_json.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {

class TensorMaps : public test::PrivateCacheTest {};

std::string tma_copy() {
  return (test::source_dir() / "tests/fixtures/problems/tma_copy").string();
}

// The device's arch, from `kopt env` (not from the command under test), before the test runs.
std::string device_arch() {
  int rc = -1;
  auto env = test::kopt_json({"env", "--no-ncu-probe"}, rc);
  const auto& gpus = env["gpus"];
  return gpus.is_array() && !gpus.empty() ? gpus[0].value("arch", "unknown") : "none";
}
#define KOPT_SKIP_WITHOUT_SM90()                                   \
  if (std::string kopt_arch = device_arch(); kopt_arch != "sm_90") \
  GTEST_SKIP() << "TMA with sm_90a needs an sm_90 device; this one is " << kopt_arch

TEST_F(TensorMaps, ATmaCopyPassesItsCheckAtBothShapesAndIsTimed) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_SM90();
  int rc = -1;
  auto c = test::kopt_json({"--backend", "cuda", "check", tma_copy()}, rc);
  ASSERT_EQ(rc, 0) << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["status"], "passed") << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["build"]["arch"], "sm_90a");
  EXPECT_EQ(c["other_shape"]["dims"], "cols=136 rows=77") << c.dump(2);
  EXPECT_EQ(c["other_shape"]["note"], "") << c.dump(2);
  for (const char* box : {"BR=16", "BR=64"}) {
    auto other = test::kopt_json(
        {"--backend", "cuda", "check", tma_copy(), "--set", box, "--set", "BC=32"}, rc);
    ASSERT_EQ(rc, 0) << box << "\n" << other.dump(2);
    EXPECT_EQ(other["kernels"][0]["status"], "passed") << box;
  }
  auto b = test::kopt_json({"--backend", "cuda", "bench", tma_copy(), "--max-time", "0.5"}, rc);
  ASSERT_EQ(rc, 0) << b.dump(2);
  EXPECT_GT(b["variants"][0]["summary"]["median"].get<double>(), 0);
}

TEST_F(TensorMaps, AnArchTheDeviceCannotRunIsAFailedBuildNamingTheField) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  auto c = test::kopt_json({"--backend", "cuda", "check", tma_copy(), "--arch", "sm_80"}, rc);
  EXPECT_EQ(rc, 1) << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["status"], "compile_failed") << c.dump(2);
  std::string log = c["kernels"][0]["build"]["log"];
  EXPECT_NE(log.find("kopt.toml:44: kernels[0].arch: kernel 'tma_copy' is built for sm_90a, which "
                     "runs only on sm_90 "
                     "devices; this device is sm_80"),
            std::string::npos)
      << log;
}

TEST_F(TensorMaps, RowsTmaCannotStrideAreAFailedLaunch) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_SM90();
  int rc = -1;
  // 772 bf16 columns are 1544-byte rows: not a multiple of 16.
  auto c = test::kopt_json({"--backend", "cuda", "check", tma_copy(), "--dim", "cols=772"}, rc);
  EXPECT_EQ(rc, 1) << c.dump(2);
  EXPECT_EQ(c["kernels"][0]["status"], "run_failed") << c.dump(2);
  std::string error = c["kernels"][0]["seeds"][0]["error"];
  EXPECT_NE(error.find("a step along dim 0 is 1544 bytes, which TMA needs to be a multiple of 16"),
            std::string::npos)
      << error;
  EXPECT_EQ(c["kernels"][0]["seeds"][0]["status"], "launch_failed");
}

}  // namespace
}  // namespace kopt
