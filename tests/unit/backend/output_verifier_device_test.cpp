// The verification compared where the outputs are (output_verifier.hpp, DeviceComparer): the
// golden launch against the reference, the inputs by their hash, samples whose hash differs
// against the golden's copy, secret samples against the reference's outputs for their inputs;
// nothing read back, and every verdict the one the host's comparison gives. Where the device
// has no room, the host compares as before.
#include <gtest/gtest.h>

#include "kopt/backend/output_verifier.hpp"
#include "kopt/core/hash.hpp"
#include "verifier_fakes.hpp"

using namespace kopt::fakes;

namespace kopt {
namespace {

class OutputVerifierDevice : public ::testing::Test {
 protected:
  // x (an input with its recipe's checksum) and y = the reference's 1.5, a file.
  RunJob job() {
    JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
    x.checksum = hex64(checksum64(floats(3.0f)));
    y.expected_path = float_file(m_dir, "y.bin", 1.5f);
    y.tolerance = Tolerance{1e-6, 1e-5};
    return job_with({x, y});
  }
  // x = 3 and y = `y` on `dev`, and a verifier that compares there with the inputs noted and
  // the golden taken.
  static std::unique_ptr<OutputVerifier> golden(const RunJob& j, FakeDevice& dev, float y,
                                                std::uint64_t seed = 5) {
    dev.fill(0, 3.0f);
    dev.fill(1, y);
    auto v = std::make_unique<OutputVerifier>(j, BenchOptions{}, seed, true, true);
    EXPECT_FALSE(v->note_inputs(dev.hasher()));
    EXPECT_FALSE(v->take_golden(dev.reader(), dev.hasher(), dev.comparer()));
    return v;
  }
  TempDir m_dir{"kopt-verifier-device"};
};

TEST_F(OutputVerifierDevice, TheGoldenIsCheckedOnTheDeviceAndNothingIsReadBack) {
  RunJob j = job();
  FakeDevice dev(j);
  const SampleVerification r = golden(j, dev, 1.5f)->record();
  EXPECT_TRUE(r.reference_checked);
  EXPECT_EQ(r.check_failure, "");
  EXPECT_EQ(dev.reads, 0);
  EXPECT_EQ(r.read_back_bytes, 0u);
  EXPECT_EQ(r.compared_on_device, 1u);
  EXPECT_EQ(dev.kept.count(1), 1u) << "the golden kept beside the job's tensors";
  // The reference's outputs named by their file (path, size, time): what a backend keeps its
  // device copy under for the next candidate, without the host's copy.
  ASSERT_EQ(dev.uploaded.size(), 1u);
  EXPECT_NE(dev.uploaded.begin()->first.find("y.bin|32|"), std::string::npos)
      << dev.uploaded.begin()->first;
}

TEST_F(OutputVerifierDevice, AWrongGoldenFailsTheCheckWithTheHostsWords) {
  RunJob j = job();
  FakeDevice dev(j);
  EXPECT_EQ(golden(j, dev, 2.5f)->record().check_failure,
            "output y: 8 of 8 elements differ from the reference (first at [0]: 2.5 against 1.5)");
  EXPECT_EQ(dev.reads, 0);
}

TEST_F(OutputVerifierDevice, AnInputTheKernelWroteIsCaughtByItsHash) {
  RunJob j = job();
  FakeDevice dev(j);
  dev.fill(0, 3.0f);
  dev.fill(1, 1.5f);
  OutputVerifier v(j, BenchOptions{}, 5, true, true);
  ASSERT_FALSE(v.note_inputs(dev.hasher()));  // before the first launch
  dev.fill(0, 3.5f);                          // the launches wrote it
  ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher(), dev.comparer()));
  EXPECT_EQ(v.record().check_failure, "the kernel modified input tensor 'x'");
  EXPECT_EQ(dev.reads, 0);
}

TEST_F(OutputVerifierDevice, SamplesAreComparedWithTheGoldensCopyWhereTheirHashDiffers) {
  RunJob j = job();
  FakeDevice dev(j);
  auto verifier = golden(j, dev, 1.5f, 7);
  OutputVerifier& v = *verifier;
  // Other bytes within twice the tolerance (an atomic reduction's order): compared, passed.
  dev.fill(1, 1.5f + 1e-5f);
  ASSERT_FALSE(v.check_sample(dev.reader(), 4, dev.hasher(), dev.comparer()));
  EXPECT_FALSE(v.record().failed()) << v.record().failure;
  // Work skipped: the poison left behind, caught on the device, named as the host names it.
  dev.poison(1);
  ASSERT_FALSE(v.check_sample(dev.reader(), 5, dev.hasher(), dev.comparer()));
  const SampleVerification r = v.record();
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failed_sample, 5);
  EXPECT_NE(r.failure.find("8 of 8 elements differ from the variant's own output"),
            std::string::npos)
      << r.failure;
  EXPECT_NE(r.failure.find("all 8 are left poisoned"), std::string::npos) << r.failure;
  EXPECT_EQ(dev.reads, 0);
  EXPECT_EQ(r.read_back_bytes, 0u);
  EXPECT_EQ(r.compared_on_device, 3u);  // the golden against the reference, then two samples
}

TEST_F(OutputVerifierDevice, WithoutRoomOnTheDeviceTheHostComparesAsBefore) {
  RunJob j = job();
  for (bool wrong : {false, true}) {
    FakeDevice dev(j);
    dev.room = false;
    dev.room_for_expected = false;
    auto verifier = golden(j, dev, wrong ? 2.5f : 1.5f);
    OutputVerifier& v = *verifier;
    EXPECT_EQ(dev.compares, 0);
    // The golden read back once and compared on the host; the input still by its hash.
    EXPECT_EQ(dev.reads, 1);
    EXPECT_EQ(v.record().read_back_bytes, 32u);
    EXPECT_EQ(v.record().compared_on_device, 0u);
    EXPECT_EQ(v.record().check_failure.empty(), !wrong) << v.record().check_failure;
    if (wrong) continue;
    dev.poison(1);
    ASSERT_FALSE(v.check_sample(dev.reader(), 5, dev.hasher(), dev.comparer()));
    EXPECT_TRUE(v.record().failed());
    EXPECT_EQ(dev.reads, 2);
  }
}

TEST_F(OutputVerifierDevice, AReferenceWithoutRoomIsComparedOnTheHostFromTheGoldenStillThere) {
  RunJob j = job();
  FakeDevice dev(j);
  dev.room_for_expected = false;  // the golden's copy fits, the reference's outputs do not
  const SampleVerification r = golden(j, dev, 1.5f)->record();
  EXPECT_EQ(r.check_failure, "");
  EXPECT_EQ(dev.reads, 1);  // the job's tensor, which still holds the golden launch's outputs
  EXPECT_EQ(r.compared_on_device, 0u);
}

// The secret seed's samples: compared with the reference's outputs for those inputs on the
// device; the inputs themselves are written from the host (two samples).
TEST_F(OutputVerifierDevice, SecretSamplesAreComparedOnTheDevice) {
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.input_path = float_file(m_dir, "x.bin", 1.0f);
  x.secret_input_path = float_file(m_dir, "x.secret.bin", 3.0f);
  y.secret_expected_path = float_file(m_dir, "y.secret.bin", 6.0f);
  RunJob j = job_with({x, y});
  for (bool honest : {true, false}) {
    FakeDevice dev(j);
    dev.fill(0, 1.0f);
    dev.fill(1, 2.0f);
    OutputVerifier v(j, BenchOptions{}, 11, true, true);
    ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher(), dev.comparer()));
    std::size_t secret = 0;
    for (std::size_t i = 0; i < 40 && !v.record().failed(); ++i) {
      if (!v.poison_before(i, 1e9)) continue;
      const bool on_secret = v.secret_before(i);
      if (on_secret) {
        ASSERT_FALSE(v.write_inputs(dev.writer(), i));
      }
      dev.poison(1);
      // y = 2 x, computed from what is in x now; a cheat answers seed 1's 2.0 always.
      float x0 = 0;
      std::memcpy(&x0, dev.buffers[0].data(), 4);
      dev.fill(1, honest ? 2 * x0 : 2.0f);
      ASSERT_FALSE(v.check_sample(dev.reader(), i, dev.hasher(), dev.comparer()));
      if (on_secret) {
        ++secret;
        ASSERT_FALSE(v.write_inputs(dev.writer()));
      }
    }
    EXPECT_EQ(v.record().failed(), !honest) << v.record().failure;
    EXPECT_GE(secret, 1u);
    EXPECT_EQ(dev.reads, 0);
    if (!honest) {
      EXPECT_NE(v.record().failure.find("differ from the reference's outputs for those inputs"),
                std::string::npos)
          << v.record().failure;
    }
  }
}

}  // namespace
}  // namespace kopt
