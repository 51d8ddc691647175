// A cold sample is cold on a CPU device too (label opencl_timing: PoCL in CI, run when the
// host is not loaded on purpose). A buffer rewritten before each sample left a 786 KiB
// problem in the caches of CI's AMD EPYC host: its "cold" median (11.5 us) was its hot one,
// below the DRAM floor. The OpenCL timer now evicts the sample's own tensors' lines by
// address (backend/opencl/host_cache.hpp); on a 2-core Xeon the same kernel reads 51 us cold
// against 15 us hot, where the rewritten buffer gave 66-77 us at 18 samples a second.
#include <gtest/gtest.h>

#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"

namespace kopt {
namespace {
using nlohmann::json;

class OpenclColdSample : public test::PrivateCacheTest {
 protected:
  static json bench(const char* mode, int& rc) {
    return test::kopt_json(
        {"--backend", "opencl", "bench", (test::source_dir() / "examples" / "vector_add").string(),
         "--kernel", "naive", "--dim", "n=65536", "--mode", mode, "--max-time", "1"},
        rc);
  }
};

TEST_F(OpenclColdSample, ACpuDevicesColdSampleReadsItsTensorsFromDram) {
  KOPT_SKIP_WITHOUT_OPENCL();
  // kopt's first OpenCL device, the one bench uses: GPUs come first.
  if (auto d = opencl::list_opencl_devices(); d->front().type != "cpu")
    GTEST_SKIP() << "the first OpenCL device is no CPU: " << d->front().name;
  int rc = -1;
  json hot = bench("hot", rc);
  ASSERT_EQ(rc, 0) << hot.dump(2);
  json cold = bench("cold", rc);
  ASSERT_EQ(rc, 0) << cold.dump(2);
  // The three tensors of n floats, evicted: what was flushed is named with its bytes.
  EXPECT_EQ(cold["flush_method"], "evict") << cold.dump(2);
  EXPECT_EQ(cold["flush_bytes"], 3 * 65536 * 4);
  EXPECT_EQ(hot["flush_bytes"], 0);
  const double hot_s = hot["variants"][0]["summary"]["median"];
  const double cold_s = cold["variants"][0]["summary"]["median"];
  // From DRAM, not from a cache: at least half as slow again as the same launch hot.
  EXPECT_GT(cold_s, 1.5 * hot_s) << "cold " << cold_s << " s, hot " << hot_s << " s";
  // Evicting 768 KiB costs microseconds, not a rewrite of the whole cache: hundreds of
  // samples in the second, not tens.
  EXPECT_GT(cold["variants"][0]["summary"]["n"].get<int>(), 200) << cold.dump(2);
}

}  // namespace
}  // namespace kopt
