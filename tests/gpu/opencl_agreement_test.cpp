// The same examples through NVIDIA's OpenCL and through CUDA on one GPU (label "gpu"): both
// backends pass against the same CPU reference, on the same device, and their times are
// printed side by side for the record.
#include <gtest/gtest.h>

#include <iostream>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"

namespace kopt {
namespace {

class BackendAgreement : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ::setenv("KOPT_CACHE_DIR", (m_dir.path() / "cache").c_str(), 1); }
  void TearDown() override { ::unsetenv("KOPT_CACHE_DIR"); }
  TempDir m_dir{"kopt-agreement-test"};
};

TEST_P(BackendAgreement, OpenclOnTheGpuPassesLikeCuda) {
  KOPT_SKIP_WITHOUT_GPU();
  KOPT_SKIP_WITHOUT_OPENCL();
  auto devices = opencl::list_opencl_devices();
  if (devices->front().type != "gpu")
    GTEST_SKIP() << "no OpenCL GPU (first device: " << devices->front().name << ")";
  std::string ex = (test::source_dir() / "examples" / GetParam()).string();
  std::map<std::string, nlohmann::json> by_backend;
  for (const char* backend : {"cuda", "opencl"}) {
    int rc = -1;
    auto j = test::kopt_json({"--backend", backend, "check", ex, "--seeds", "2"}, rc);
    ASSERT_EQ(rc, 0) << backend << "\n" << j.dump(2);
    by_backend[backend] = j;
    int brc = -1;
    auto b =
        test::kopt_json({"--backend", backend, "bench", ex, "--max-time", "2", "--no-check"}, brc);
    ASSERT_EQ(brc, 0) << backend << "\n" << b.dump(2);
    for (const auto& v : b["variants"])
      std::cout << "[ timing ] " << GetParam() << " " << backend << " "
                << v["kernel"].get<std::string>() << " "
                << v["summary"]["median"].get<double>() * 1e6 << " us\n";
  }
  EXPECT_EQ(by_backend["opencl"]["device"]["device_type"], "gpu");
  // The same kernels, each within tolerance of the one reference on both backends.
  ASSERT_EQ(by_backend["cuda"]["kernels"].size(), by_backend["opencl"]["kernels"].size());
  for (std::size_t i = 0; i < by_backend["cuda"]["kernels"].size(); ++i) {
    EXPECT_EQ(by_backend["cuda"]["kernels"][i]["kernel"],
              by_backend["opencl"]["kernels"][i]["kernel"]);
    EXPECT_EQ(by_backend["opencl"]["kernels"][i]["status"], "passed");
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, BackendAgreement,
                         ::testing::Values("vector_add", "softmax", "transpose", "reduction"));

}  // namespace
}  // namespace kopt
