// Timed launches compared by their keyed hash where the outputs are (output_verifier.hpp): the
// same bytes cost no read back, and every kind of skipped or changed work is still read back and
// caught by the checker's comparison, as without the hash.
#include <gtest/gtest.h>

#include "kopt/backend/output_verifier.hpp"
#include "verifier_fakes.hpp"

using namespace kopt::fakes;

namespace kopt {
namespace {

TEST(OutputVerifierHash, SamplesWithTheGoldensBytesAreNotReadBack) {
  RunJob job = job_with({tensor("x", Role::input, 8), tensor("y", Role::output, 8)});
  FakeDevice dev(job);
  dev.fill(1, 1.5f);
  OutputVerifier v(job, BenchOptions{}, 3, true);
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher()));
  const int golden_reads = dev.reads;
  std::size_t compared = 0, last = 0;
  for (std::size_t i = 0; i < 200; ++i)
    if (v.poison_before(i, 1e9)) {
      last = i;
      dev.poison(1);
      dev.fill(1, 1.5f);  // recomputed
      ASSERT_FALSE(v.check_sample(dev.reader(), i, dev.hasher()));
      ++compared;
    }
  ASSERT_FALSE(v.check_last(dev.reader(), 200, dev.hasher()));
  EXPECT_GE(compared, 2u);
  EXPECT_EQ(dev.reads, golden_reads);
  const SampleVerification r = v.record();
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.last_checked);
  // The poisoned samples, and the last launch unless it was one of them.
  EXPECT_EQ(r.device_compared, compared + (last == 199 ? 0 : 1));
  EXPECT_GT(dev.hashes, 2);
}

TEST(OutputVerifierHash, ALaunchThatSkippedItsWorkIsReadBackAndCaught) {
  RunJob job = job_with({tensor("y", Role::output, 8)});
  FakeDevice dev(job);
  dev.fill(0, 1.5f);
  OutputVerifier v(job, BenchOptions{}, 5, true);
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher()));
  dev.poison(0);  // left as the timer poisoned it
  ASSERT_FALSE(v.check_sample(dev.reader(), 3, dev.hasher()));
  const SampleVerification r = v.record();
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failed_sample, 3);
  EXPECT_EQ(r.device_compared, 0u);
  EXPECT_NE(r.failure.find("all 8 are left poisoned"), std::string::npos) << r.failure;
}

TEST(OutputVerifierHash, OneElementChangedInAMillionIsCaught) {
  RunJob job = job_with({tensor("y", Role::output, 1 << 20)});
  FakeDevice dev(job);
  dev.fill(0, 0.25f);
  OutputVerifier v(job, BenchOptions{}, 6, true);
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher()));
  const float wrong = 0.5f;
  std::memcpy(dev.buffers[0].data() + 4 * 777777, &wrong, 4);
  ASSERT_FALSE(v.check_last(dev.reader(), 10, dev.hasher()));
  ASSERT_TRUE(v.record().failed());
  EXPECT_NE(v.record().failure.find("1 of 1048576 elements differ"), std::string::npos)
      << v.record().failure;
}

// An atomic reduction's order: other bytes, within twice the tolerance of the golden. Read back,
// compared element by element, and passed.
TEST(OutputVerifierHash, OtherBytesWithinTheToleranceAreReadBackAndPass) {
  RunJob job = job_with({tensor("y", Role::output, 8)});
  job.tensors[0].tolerance = Tolerance{1e-6, 1e-5};
  FakeDevice dev(job);
  dev.fill(0, 1.0f);
  OutputVerifier v(job, BenchOptions{}, 7, true);
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher()));
  const int reads = dev.reads;
  dev.fill(0, 1.0f + 1e-6f);
  ASSERT_FALSE(v.check_sample(dev.reader(), 4, dev.hasher()));
  EXPECT_FALSE(v.record().failed()) << v.record().failure;
  EXPECT_EQ(dev.reads, reads + 1);
  EXPECT_EQ(v.record().device_compared, 0u);
}

// Without a read back for the same bytes, outputs past the readback budget are still poisoned
// and compared, where without the hash only the last launch was; the read backs of samples
// whose hash differs are what the budget then bounds.
TEST(OutputVerifierHash, TheReadbackBudgetBoundsOnlyTheSamplesReadBack) {
  RunJob huge = job_with({tensor("y", Role::output, (k_verify_readback_budget / 4) + 1)});
  OutputVerifier hashed(huge, BenchOptions{}, 8, true), plain(huge, BenchOptions{}, 8);
  std::size_t poisoned = 0;
  for (std::size_t i = 0; i < 100; ++i) {
    EXPECT_FALSE(plain.poison_before(i, 1e9));
    poisoned += hashed.poison_before(i, 1e9);
  }
  EXPECT_GE(poisoned, 2u);
  EXPECT_EQ(hashed.record().note, "");
  EXPECT_NE(plain.record().note.find("only the last launch is compared"), std::string::npos);
}

// The secret-seed samples are read back and compared on the host whatever the hash: outputs
// past a quarter of the readback budget get none, as without the hash.
TEST(OutputVerifierHash, OutputsPastAQuarterOfTheBudgetGetNoSecretSampleReadBack) {
  auto job = [](std::size_t numel) {
    RunJob j = job_with({tensor("x", Role::input, 4), tensor("y", Role::output, numel)});
    j.tensors[0].secret_input_path = "/nonexistent/x.secret.bin";
    j.tensors[1].secret_expected_path = "/nonexistent/y.secret.bin";
    return j;
  };
  auto secret_samples = [](const RunJob& j) {
    OutputVerifier v(j, BenchOptions{}, 11, true);
    std::size_t n = 0;
    for (std::size_t i = 0; i < 20; ++i) n += v.poison_before(i, 1e9) && v.secret_before(i);
    return n;
  };
  EXPECT_EQ(secret_samples(job(1024)), 2u);  // the secret seed's and the mix
  EXPECT_EQ(secret_samples(job(k_verify_readback_budget / 16 + 1)), 0u);
}

// A HashTensor that fails (the device lost) fails the bench as a read would, not the variant.
TEST(OutputVerifierHash, AHashThatFailsIsTheTimersFailure) {
  RunJob job = job_with({tensor("y", Role::output, 8)});
  FakeDevice dev(job);
  OutputVerifier v(job, BenchOptions{}, 9, true);
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher()));
  HashTensor lost = [](std::size_t, std::uint64_t, std::uint64_t&) -> std::optional<RunResult> {
    return RunResult{RunStatus::fault, "cuLaunchKernel(kopt_keyed_hash): an illegal address"};
  };
  auto f = v.check_sample(dev.reader(), 2, lost);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->status, RunStatus::fault);
  EXPECT_FALSE(v.record().failed());
}

}  // namespace
}  // namespace kopt
