// The OpenCL timer verifies where the outputs are (backend/opencl/device_verify.hpp; PoCL in
// CI): its build of the comparison judges every case as compare_tensors does, its keyed hash is
// measure/keyed_hash.hpp's, and a bench reads nothing back to verify an honest kernel while it
// still catches one that skips its work.
#include "backend/opencl/device_verify.hpp"

#include <gtest/gtest.h>

#include <bit>

#include "compare_cases.hpp"
#include "kopt/measure/keyed_hash.hpp"
#include "kopt_json.hpp"
#include "opencl_skip.hpp"
#include "private_cache.hpp"
#include "skipped_work_problem.hpp"

namespace kopt {
namespace {
using nlohmann::json;

class OpenclDeviceVerify : public test::PrivateCacheTest {
 protected:
  void SetUp() override {
    test::PrivateCacheTest::SetUp();
    if (auto d = opencl::list_opencl_devices(); !d) GTEST_SKIP() << d.error().message;
    auto s = opencl::open_session(0);
    ASSERT_TRUE(s) << s.error().message;
    m_session = std::move(*s);
    m_verify = std::make_unique<opencl::DeviceVerify>(*m_session, m_cache);
    if (!m_verify->ok()) GTEST_SKIP() << "no verification kernels on this device: " << m_cache.why;
  }
  // A one-tensor job whose buffer holds `got`.
  void load(const HostTensor& got) {
    const opencl::OpenclApi& api = *m_session->api;
    m_job = RunJob{};
    JobTensor t;
    t.name = got.name;
    t.role = Role::output;
    t.dtype = got.dtype;
    t.bytes = got.data.size();
    t.shape = got.shape;
    m_job.tensors = {t};
    cl_int err = CL_SUCCESS;
    m_kernel = opencl::PreparedKernel{};
    m_kernel.buffers.emplace_back(
        &api, api.create_buffer(m_session->context.get(), CL_MEM_READ_WRITE, got.data.size(),
                                nullptr, &err));
    ASSERT_EQ(err, CL_SUCCESS);
    ASSERT_EQ(api.enqueue_write_buffer(m_session->queue.get(), m_kernel.buffers[0].get(), CL_TRUE,
                                       0, got.data.size(), got.data.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
  }
  std::unique_ptr<opencl::Session> m_session;
  opencl::DeviceVerifyCache m_cache;
  std::unique_ptr<opencl::DeviceVerify> m_verify;
  RunJob m_job;
  opencl::PreparedKernel m_kernel;
};

TEST_F(OpenclDeviceVerify, TheComparisonJudgesEveryDtypeAsCompareTensorsDoes) {
  for (DType t : test::k_compare_dtypes)
    for (Tolerance tol : {default_tolerance(t), Tolerance{1e-3, 1e-2}, Tolerance{0, 0}}) {
      auto [got, expected] = test::compare_cases(t, tol, 5, 20000);
      load(got);
      DeviceComparer d = m_verify->comparer(m_kernel, m_job);
      std::optional<CompareResult> out;
      const ExpectedOutputs e{std::make_shared<const HostTensor>(expected),
                              std::string(dtype_name(t)) + std::to_string(tol.atol)};
      ASSERT_FALSE(d.compare(0, &e, tol, out));
      ASSERT_TRUE(out) << "no room for 20000 elements";
      CompareResult h = compare_tensors(got, expected, tol, 1);
      const std::string what = std::string(dtype_name(t)) + " atol " + std::to_string(tol.atol);
      EXPECT_EQ(out->passed, h.passed) << what;
      EXPECT_EQ(out->mismatches, h.mismatches) << what;
      EXPECT_EQ(out->nan_count, h.nan_count) << what;
      EXPECT_EQ(out->inf_count, h.inf_count) << what;
      EXPECT_EQ(out->unwritten, h.unwritten) << what;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(out->max_abs_err),
                std::bit_cast<std::uint64_t>(h.max_abs_err))
          << what;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(out->max_rel_err),
                std::bit_cast<std::uint64_t>(h.max_rel_err))
          << what;
      ASSERT_EQ(out->first_mismatches.size(), h.first_mismatches.size()) << what;
      if (!h.first_mismatches.empty()) {
        EXPECT_EQ(out->first_mismatches[0].flat, h.first_mismatches[0].flat) << what;
        EXPECT_EQ(out->first_mismatches[0].index, h.first_mismatches[0].index) << what;
        EXPECT_EQ(std::bit_cast<std::uint64_t>(out->first_mismatches[0].got),
                  std::bit_cast<std::uint64_t>(h.first_mismatches[0].got))
            << what;
      }
    }
}

TEST_F(OpenclDeviceVerify, TheHashIsTheKeyedHashAndAGoldenCopyIsKept) {
  auto [got, expected] = test::compare_cases(DType::i8, Tolerance{}, 9, 4099);  // a tail of 3
  load(got);
  HashTensor hash = m_verify->hasher(m_kernel, m_job);
  std::uint64_t h = 0;
  ASSERT_FALSE(hash(0, 0x1234567887654321ull, h));
  EXPECT_EQ(h, keyed_hash(got.data, 0x1234567887654321ull));
  DeviceComparer d = m_verify->comparer(m_kernel, m_job);
  bool kept = false;
  ASSERT_FALSE(d.keep(0, kept));
  ASSERT_TRUE(kept);
  std::optional<CompareResult> out;
  ASSERT_FALSE(d.compare(0, nullptr, Tolerance{}, out));
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->passed);  // the buffer against its own copy
  EXPECT_EQ(out->mismatches, 0u);
}

// The timer's whole path on PoCL (asked for: on a CPU device kopt compares on the host by
// itself): an honest kernel verified with nothing read back, a kernel that skips every other
// launch caught as before.
class OpenclBenchOnTheDevice : public test::PrivateCacheTest {
 protected:
  void SetUp() override {
    test::PrivateCacheTest::SetUp();
    test::write_skipped_work_problem(m_dir.path() / "problem");
  }
  json bench(const char* kernel, int& rc, const char* where = "device") {
    return test::kopt_json({"--backend", "opencl", "bench", (m_dir.path() / "problem").string(),
                            "--kernel", kernel, "--max-time", "1", "--verify-on", where},
                           rc);
  }
};

TEST_F(OpenclBenchOnTheDevice, OnACpuDeviceTheHostComparesUnlessTheDeviceIsAskedFor) {
  KOPT_SKIP_WITHOUT_OPENCL();
  if (auto d = opencl::list_opencl_devices(); d->front().type != "cpu")
    GTEST_SKIP() << "the first OpenCL device is no CPU: " << d->front().name;
  int rc = -1;
  json j = bench("honest", rc, "auto");
  ASSERT_EQ(rc, 0) << j.dump(2);
  const json& check = j["variants"][0]["series"]["verification"];
  EXPECT_GT(check["read_back_bytes"].get<std::uint64_t>(), 0u) << check.dump(2);
  EXPECT_EQ(check["compared_on_device"], 0) << check.dump(2);
  EXPECT_EQ(j["options"]["verify_on"], "auto");
}

TEST_F(OpenclBenchOnTheDevice, AnHonestKernelIsVerifiedWithNothingReadBack) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  json j = bench("honest", rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  const json& check = j["variants"][0]["series"]["verification"];
  EXPECT_GE(check["poisoned_samples"].get<int>(), 2) << check.dump(2);
  EXPECT_EQ(check["read_back_bytes"], 0) << check.dump(2);
  EXPECT_GE(check["device_compared"].get<int>(), 2) << check.dump(2);
  if (check["reference_checked"].get<bool>()) {
    EXPECT_GE(check["compared_on_device"].get<int>(), 1) << check.dump(2);
  }
}

TEST_F(OpenclBenchOnTheDevice, AKernelThatSkipsLaunchesIsCaughtOnTheDevice) {
  KOPT_SKIP_WITHOUT_OPENCL();
  int rc = -1;
  json j = bench("skipping", rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  const json& v = j["variants"][0];
  EXPECT_EQ(v["status"], "inconsistent") << v.dump(2);
  EXPECT_NE(v["error"].get<std::string>().find("output 'y': 1048576 of 1048576 elements differ"),
            std::string::npos)
      << v["error"];
  EXPECT_GE(v["series"]["verification"]["compared_on_device"].get<int>(), 1) << v.dump(2);
  EXPECT_EQ(v["series"]["verification"]["read_back_bytes"], 0) << v.dump(2);
}

}  // namespace
}  // namespace kopt
