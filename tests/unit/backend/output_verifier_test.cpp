// The verification of timed launches (output_verifier.hpp) against a fake device: which
// samples are poisoned, what the readback budget allows, and the reasons it gives.
#include "kopt/backend/output_verifier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "verifier_fakes.hpp"

using namespace kopt::fakes;

namespace kopt {
namespace {

TEST(OutputVerifier, PoisonsAboutATenthOfTheSamplesAtLeastTwoEarlyAndSpreadOut) {
  RunJob job = job_with({tensor("x", Role::input, 16), tensor("y", Role::output, 16)});
  BenchOptions opt;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    OutputVerifier v(job, opt, seed);
    ASSERT_TRUE(v.active());
    EXPECT_EQ(v.outputs(), (std::vector<std::size_t>{1}));
    std::size_t early = 0, first_half = 0, second_half = 0;
    for (std::size_t i = 0; i < 2000; ++i)
      if (v.poison_before(i, 1e9)) {
        early += i < opt.rule.min_samples;
        (i < 1000 ? first_half : second_half) += 1;
      }
    EXPECT_GE(early, 2u) << "seed " << seed;
    EXPECT_GT(first_half, 60u) << "seed " << seed;
    EXPECT_GT(second_half, 60u) << "seed " << seed;
    EXPECT_LT(first_half + second_half, 300u) << "seed " << seed;
  }
  // Another seed, another choice: the kernel cannot know which launch is checked.
  OutputVerifier a(job, opt, 1), b(job, opt, 2);
  std::vector<bool> ca, cb;
  for (std::size_t i = 0; i < 200; ++i) {
    ca.push_back(a.poison_before(i, 1e9));
    cb.push_back(b.poison_before(i, 1e9));
  }
  EXPECT_NE(ca, cb);
}

// A kernel that works on every other launch and skips the rest is caught whatever the seed:
// two of the early poisoned samples are adjacent launches, so one of them is a skipped one.
TEST(OutputVerifier, TwoAdjacentEarlySamplesCatchAKernelThatSkipsEveryOtherLaunch) {
  RunJob job = job_with({tensor("x", Role::input, 16), tensor("y", Role::output, 16)});
  BenchOptions opt;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    OutputVerifier v(job, opt, seed);
    std::vector<std::size_t> early;
    for (std::size_t i = 0; i < opt.rule.min_samples; ++i)
      if (v.poison_before(i, 1e9)) early.push_back(i);
    bool odd = false, even = false;
    for (std::size_t i : early) (i % 2 ? odd : even) = true;
    EXPECT_TRUE(odd && even) << "seed " << seed << ": every poisoned launch of the first "
                             << opt.rule.min_samples << " has the same parity";
  }
}

TEST(OutputVerifier, OnlyOutputsAreVerifiedAndTheOptionTurnsItOff) {
  RunJob inout = job_with({tensor("x", Role::input, 16), tensor("total", Role::inout, 1)});
  EXPECT_FALSE(
      OutputVerifier(inout, BenchOptions{}, 1).active());  // accumulates from launch to launch
  RunJob job = job_with({tensor("y", Role::output, 16)});
  BenchOptions off;
  off.verify_samples = false;
  OutputVerifier v(job, off, 1);
  EXPECT_FALSE(v.active());
  for (std::size_t i = 0; i < 100; ++i) EXPECT_FALSE(v.poison_before(i, 1e9));
  EXPECT_FALSE(v.record().enabled);
}

TEST(OutputVerifier, LargeOutputsGetFewerPoisonedSamplesDownToOnlyTheLast) {
  BenchOptions opt;
  RunJob big = job_with({tensor("y", Role::output, (std::size_t{3} << 30) / 8)});  // 1.5 GiB of f32
  OutputVerifier one(big, opt, 1);
  std::size_t n = 0;
  for (std::size_t i = 0; i < 1000; ++i) n += one.poison_before(i, 1e9);
  EXPECT_EQ(n, 1u);
  EXPECT_NE(one.record().note.find("at most 1 poisoned sample"), std::string::npos)
      << one.record().note;
  RunJob huge = job_with({tensor("y", Role::output, std::size_t{3} << 30)});  // 12 GiB
  OutputVerifier last_only(huge, opt, 1);
  for (std::size_t i = 0; i < 1000; ++i) EXPECT_FALSE(last_only.poison_before(i, 1e9));
  EXPECT_NE(last_only.record().note.find("only the last launch is compared"), std::string::npos);
}

// Beyond the two early samples, verifying may take 10 % of the wall time, no more.
TEST(OutputVerifier, VerifyingKeepsToItsShareOfTheWallTime) {
  RunJob job = job_with({tensor("y", Role::output, 4)});
  FakeDevice dev(job);
  OutputVerifier v(job, BenchOptions{}, 4);
  ASSERT_FALSE(v.take_golden(dev.reader()));
  ReadTensor slow = [&](std::size_t i, std::vector<std::byte>& host) -> std::optional<RunResult> {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return dev.reader()(i, host);
  };
  std::size_t early = 0, later = 0;
  for (std::size_t i = 0; i < 2000; ++i)
    if (v.poison_before(i, 0.1)) {  // 20 ms of a 100 ms bench: over the share after the first
      ASSERT_FALSE(v.check_sample(slow, i));
      (i < 10 ? early : later) += 1;
    }
  EXPECT_GE(early,
            2u);  // the two early ones, whatever the time (and a draw before any time was spent)
  EXPECT_EQ(later, 0u);
  ASSERT_FALSE(v.check_last(dev.reader(), 2000));
  EXPECT_NE(v.record().note.find("within 10 % of the wall time"), std::string::npos)
      << v.record().note;
}

TEST(OutputVerifier, AnOutputLeftPoisonedFailsWithTheSampleTheCountAndTheFirstElement) {
  RunJob job = job_with({tensor("x", Role::input, 8), tensor("y", Role::output, 8)});
  FakeDevice dev(job);
  OutputVerifier v(job, BenchOptions{}, 5);
  dev.fill(1, 1.5f);
  ASSERT_FALSE(v.take_golden(dev.reader()));
  // An honest timed sample: poisoned before, recomputed.
  dev.poison(1);
  dev.fill(1, 1.5f);
  ASSERT_FALSE(v.check_sample(dev.reader(), 2));
  EXPECT_FALSE(v.record().failed());
  // A timed launch that skipped its work leaves the poison.
  dev.poison(1);
  ASSERT_FALSE(v.check_sample(dev.reader(), 7));
  const SampleVerification& r = v.record();
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failed_sample, 7);
  EXPECT_EQ(r.poisoned_samples, 2u);
  EXPECT_NE(r.failure.find("timed sample samples_s[7]"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("output 'y': 8 of 8 elements differ"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("first at [0]: got nan, expected 1.5"), std::string::npos) << r.failure;
  EXPECT_NE(
      r.failure.find("all 8 are left poisoned: the kernel skipped its work on a timed launch"),
      std::string::npos)
      << r.failure;
  // Failed once is enough: nothing more is poisoned or compared.
  for (std::size_t i = 8; i < 100; ++i) EXPECT_FALSE(v.poison_before(i, 1e9));
  int reads = dev.reads;
  ASSERT_FALSE(v.check_last(dev.reader(), 100));
  EXPECT_EQ(dev.reads, reads);
}

TEST(OutputVerifier, TheLastLaunchIsComparedUnlessItWasAPoisonedSample) {
  RunJob job = job_with({tensor("y", Role::output, 4)});
  FakeDevice dev(job);
  dev.fill(0, 2.0f);
  OutputVerifier v(job, BenchOptions{}, 9);
  ASSERT_FALSE(v.take_golden(dev.reader()));
  ASSERT_FALSE(v.check_sample(dev.reader(), 41));
  int reads = dev.reads;
  ASSERT_FALSE(v.check_last(dev.reader(), 42));  // samples_s[41] was that very launch
  EXPECT_EQ(dev.reads, reads);
  EXPECT_TRUE(v.record().last_checked);

  OutputVerifier w(job, BenchOptions{}, 9);
  ASSERT_FALSE(w.take_golden(dev.reader()));
  dev.fill(0, 2.5f);  // the last launch computed something else, nothing poisoned
  ASSERT_FALSE(w.check_last(dev.reader(), 30));
  ASSERT_TRUE(w.record().failed());
  EXPECT_EQ(w.record().failed_sample, 29);
  EXPECT_NE(w.record().failure.find("after the last timed launch (samples_s[29])"),
            std::string::npos);
  EXPECT_NE(w.record().failure.find("computed something else"), std::string::npos)
      << w.record().failure;
}

TEST(OutputVerifier, DifferencesWithinTwiceTheToleranceAreConsistent) {
  JobTensor y = tensor("y", Role::output, 4);
  y.tolerance = {0.0, 1e-3};
  RunJob job = job_with({y});
  FakeDevice dev(job);
  dev.fill(0, 1.0f);
  OutputVerifier v(job, BenchOptions{}, 3);
  ASSERT_FALSE(v.take_golden(dev.reader()));
  dev.fill(0, 1.0015f);  // another order of atomic adds: within 2 x rtol of the golden
  ASSERT_FALSE(v.check_sample(dev.reader(), 0));
  EXPECT_FALSE(v.record().failed()) << v.record().failure;
  dev.fill(0, 1.01f);
  ASSERT_FALSE(v.check_sample(dev.reader(), 1));
  EXPECT_TRUE(v.record().failed());
}

TEST(OutputVerifier, AReadFailureIsTheTimersFailure) {
  RunJob job = job_with({tensor("y", Role::output, 4)});
  OutputVerifier v(job, BenchOptions{}, 3);
  ReadTensor broken = [](std::size_t, std::vector<std::byte>&) -> std::optional<RunResult> {
    RunResult r;
    r.status = RunStatus::fault;
    r.error = "cuMemcpyDtoH(y): CUDA_ERROR_ILLEGAL_ADDRESS";
    return r;
  };
  auto f = v.take_golden(broken);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, RunStatus::fault);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// The first poisoned sample gets the NaN poison, and one of the first min_samples, compared for
// sure, a stale fill of finite values that looks written; a kernel that skips its work when its
// output looks done leaves that behind.
TEST(OutputVerifier, AnEarlySampleIsFilledWithStaleValuesThatLookWritten) {
  RunJob job = job_with({tensor("x", Role::input, 8), tensor("y", Role::output, 8)});
  const std::size_t first = BenchOptions{}.rule.min_samples;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    FakeDevice dev(job);
    OutputVerifier v(job, BenchOptions{}, seed);
    dev.fill(1, 1.5f);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    std::vector<Poison> fills;
    std::optional<std::size_t> stale_at;
    for (std::size_t i = 0; i < first && !stale_at; ++i)
      if (v.poison_before(i, 1e9)) {
        fills.push_back(v.fill_for(1));
        if (fills.back().pattern != poison_for(DType::f32).pattern) stale_at = i;
      }
    ASSERT_TRUE(stale_at) << "seed " << seed;
    EXPECT_EQ(fills[0].pattern, poison_for(DType::f32).pattern) << "seed " << seed;
    float stale;
    std::memcpy(&stale, &fills.back().pattern, 4);
    EXPECT_EQ(fills.back().width, 4);
    EXPECT_TRUE(stale >= 1.0f && stale < 2.0f) << stale << " seed " << seed;
    // The kernel saw a number in its output and did nothing.
    dev.fill(1, stale);
    ASSERT_FALSE(v.check_sample(dev.reader(), *stale_at));
    ASSERT_TRUE(v.record().failed()) << "seed " << seed;
    const std::string& why = v.record().failure;
    EXPECT_NE(why.find("(outputs filled with finite stale values before it)"), std::string::npos)
        << why;
    EXPECT_NE(why.find("output looked done"), std::string::npos) << why;
  }
}

// With the secret seed's samples among the early ones, the stale fill still lands on a sample
// that is compared: when it followed the count of poisoned samples it could land on the mixed
// secret sample, which is timed only, and a kernel that skips what looks written was timed as a
// result (CI on PoCL, about one run in three).
TEST(OutputVerifier, TheStaleFillNeverLandsOnASampleThatIsNotCompared) {
  TempDir dir("kopt-verifier-stale");
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.input_path = float_file(dir, "x.bin", 1.0f);
  x.secret_input_path = float_file(dir, "x.secret.bin", 3.0f);
  y.secret_expected_path = float_file(dir, "y.secret.bin", 6.0f);
  RunJob job = job_with({x, y});
  const std::size_t first = BenchOptions{}.rule.min_samples;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    OutputVerifier v(job, BenchOptions{}, seed);
    std::vector<std::size_t> stale, secret;
    for (std::size_t i = 0; i < first; ++i) {
      if (!v.poison_before(i, 1e9)) continue;
      if (v.fill_for(1).pattern != poison_for(DType::f32).pattern) stale.push_back(i);
      if (v.secret_before(i)) secret.push_back(i);
    }
    ASSERT_EQ(secret.size(), 2u) << "seed " << seed;
    // The later secret sample runs on a mix of both seeds' inputs, with no reference to compare.
    EXPECT_TRUE(
        std::any_of(stale.begin(), stale.end(), [&](std::size_t i) { return i != secret[1]; }))
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// The check inside a timing job: the golden output against the reference's file, the inputs
// against their checksums; a failure is the record's, never the timer's.
TEST(OutputVerifier, TheGoldenOutputIsCheckedAgainstTheReferenceWhenTheJobNamesIt) {
  TempDir dir("kopt-verifier-reference");
  std::vector<std::byte> expected(8 * 4);
  for (std::size_t e = 0; e < 8; ++e) {
    float v = 1.5f;
    std::memcpy(expected.data() + 4 * e, &v, 4);
  }
  ASSERT_TRUE(write_file_atomic(dir.path() / "y.bin", expected));
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  y.expected_path = dir.path() / "y.bin";
  y.tolerance = Tolerance{1e-6, 0};
  RunJob job = job_with({x, y});
  {  // right
    FakeDevice dev(job);
    dev.fill(1, 1.5f);
    OutputVerifier v(job, BenchOptions{}, 5);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    EXPECT_TRUE(v.record().reference_checked);
    EXPECT_EQ(v.record().check_failure, "");
  }
  {  // wrong
    FakeDevice dev(job);
    dev.fill(1, 2.5f);
    OutputVerifier v(job, BenchOptions{}, 5);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    EXPECT_NE(v.record().check_failure.find(
                  "output y: 8 of 8 elements differ from the reference (first at [0]: 2.5 "
                  "against 1.5)"),
              std::string::npos)
        << v.record().check_failure;
    EXPECT_FALSE(v.record().failed());  // not inconsistent: wrong, and never timed
  }
  {  // an input written by the kernel
    JobTensor xs = x;
    std::vector<std::byte> zeros(8 * 4);
    xs.checksum = hex64(checksum64(zeros));
    RunJob with_sum = job_with({xs, y});
    FakeDevice dev(with_sum);
    dev.fill(1, 1.5f);
    dev.fill(0, 9.0f);
    OutputVerifier v(with_sum, BenchOptions{}, 5);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    EXPECT_EQ(v.record().check_failure, "the kernel modified input tensor 'x'");
  }
  {  // no expected_path: no check
    RunJob plain = job_with({tensor("x", Role::input, 8), tensor("y", Role::output, 8)});
    FakeDevice dev(plain);
    OutputVerifier v(plain, BenchOptions{}, 5);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    EXPECT_FALSE(v.record().reference_checked);
  }
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// Two of the first min_samples run on a secret seed's inputs, compared with the reference's
// outputs for them: an honest kernel passes, one that returns the answers it kept for seed 1
// (a cache keyed on where its inputs are, or answers carried for seed 1) is inconsistent.
TEST(OutputVerifier, SecretSeedSamplesCatchAnswersKeptFromSeedOne) {
  TempDir dir("kopt-verifier-secret");
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.input_path = float_file(dir, "x.bin", 1.0f);
  x.secret_input_path = float_file(dir, "x.secret.bin", 3.0f);
  y.secret_expected_path = float_file(dir, "y.secret.bin", 6.0f);
  y.tolerance = Tolerance{1e-6, 0};
  RunJob job = job_with({x, y});
  for (bool honest : {true, false}) {
    FakeDevice dev(job);
    dev.fill(0, 1.0f);
    auto launch = [&] {  // y = 2x, or seed 1's answer kept from an earlier call
      float in = 0;
      std::memcpy(&in, dev.buffers[0].data(), 4);
      dev.fill(1, honest ? 2 * in : 2.0f);
    };
    OutputVerifier v(job, BenchOptions{}, 11);
    launch();
    ASSERT_FALSE(v.take_golden(dev.reader()));
    std::size_t secret = 0;
    for (std::size_t i = 0; i < 40 && !v.record().failed(); ++i) {
      bool verify = v.poison_before(i, 1e9);
      bool on_secret = verify && v.secret_before(i);
      if (on_secret) {
        ASSERT_TRUE(v.sample_input(0, i));
        dev.buffers[0] = *v.sample_input(0, i);
        ++secret;
      }
      if (verify) dev.poison(1);
      launch();
      if (verify) {
        ASSERT_FALSE(v.check_sample(dev.reader(), i));
      }
      if (on_secret) dev.buffers[0] = *v.seed_input(0);
    }
    if (honest) {
      // The second secret sample's inputs mix the two seeds: content nobody has seen.
      std::size_t mixed = static_cast<std::size_t>(v.record().secret_samples.back());
      const std::vector<std::byte>& mix = *v.sample_input(0, mixed);
      std::set<float> values;
      for (std::size_t e = 0; e < 8; ++e) {
        float f = 0;
        std::memcpy(&f, mix.data() + 4 * e, 4);
        values.insert(f);
      }
      EXPECT_LE(values.size(), 2u);
      EXPECT_TRUE(values.count(1.0f) || values.count(3.0f));
      EXPECT_FALSE(v.record().failed()) << v.record().failure;
      EXPECT_EQ(secret, 2u);
      EXPECT_EQ(v.record().secret_samples.size(), 2u);
    } else {
      ASSERT_TRUE(v.record().failed());
      EXPECT_NE(v.record().failure.find("ran on a secret seed's inputs"), std::string::npos)
          << v.record().failure;
      EXPECT_NE(v.record().failure.find("returned answers it did not compute"), std::string::npos)
          << v.record().failure;
    }
  }
  // Without the secret seed's files, or with an inout, no sample runs on secret inputs.
  JobTensor io = tensor("acc", Role::inout, 8);
  OutputVerifier none(job_with({x, y, io}), BenchOptions{}, 11);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_FALSE(none.secret_before(i));
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// An inout is set back to seed 1's values before the golden launch and before some verified
// samples (one among the first min_samples for sure), and compared after them: a kernel that
// accumulates honestly passes however many timed launches add to it; one that skips its update
// on timed launches is inconsistent.
TEST(OutputVerifier, AnInoutIsSetBackBeforeVerifiedSamplesAndCompared) {
  TempDir dir("kopt-verifier-inout");
  JobTensor x = tensor("x", Role::input, 8), acc = tensor("acc", Role::inout, 8);
  x.input_path = float_file(dir, "x.bin", 1.0f);
  acc.input_path = float_file(dir, "acc.bin", 10.0f);
  RunJob job = job_with({x, acc});
  for (bool honest : {true, false}) {
    FakeDevice dev(job);
    dev.fill(0, 1.0f);
    dev.fill(1, 10.0f);
    auto launch = [&](bool timed) {  // acc += 2 x; the cheat only on untimed launches
      if (timed && !honest) return;
      float a = 0;
      std::memcpy(&a, dev.buffers[1].data(), 4);
      dev.fill(1, a + 2.0f);
    };
    OutputVerifier v(job, BenchOptions{}, 5);
    ASSERT_TRUE(v.active());
    for (int w = 0; w < 5; ++w) launch(false);  // warm-up: acc is far from its first values
    ASSERT_FALSE(v.reset_inouts(dev.writer()));
    launch(false);
    ASSERT_FALSE(v.take_golden(dev.reader()));
    float golden = 0;
    std::memcpy(&golden, dev.buffers[1].data(), 4);
    EXPECT_EQ(golden, 12.0f);
    std::size_t i = 0;
    for (; i < BenchOptions{}.rule.min_samples && !v.record().failed(); ++i) {
      bool verify = v.poison_before(i, 1e9);
      if (verify) {
        ASSERT_FALSE(v.reset_inouts(dev.writer()));
      }
      launch(true);
      if (verify) {
        ASSERT_FALSE(v.check_sample(dev.reader(), i));
      }
    }
    if (!v.record().failed()) {
      ASSERT_FALSE(v.check_last(dev.reader(), i));
    }
    if (honest) {
      EXPECT_FALSE(v.record().failed()) << v.record().failure;
      EXPECT_GE(v.record().poisoned_samples, 2);
      EXPECT_GE(v.record().reset_samples, 1);
      EXPECT_LT(v.record().reset_samples, v.record().poisoned_samples);  // the early two keep it
      EXPECT_FALSE(v.record().last_checked);  // acc holds every timed launch's update
      EXPECT_NE(v.record().note.find("compared after the golden launch"), std::string::npos);
    } else {
      ASSERT_TRUE(v.record().failed());
      EXPECT_NE(v.record().failure.find("output 'acc'"), std::string::npos) << v.record().failure;
      EXPECT_NE(v.record().failure.find("set back to its first values"), std::string::npos)
          << v.record().failure;
    }
  }
  // No file to set it back from: not compared (and nothing else to verify).
  JobTensor loose = tensor("acc", Role::inout, 8);
  EXPECT_FALSE(OutputVerifier(job_with({x, loose}), BenchOptions{}, 5).active());
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// The two early samples keep the inouts as the launches left them: a kernel that counts its
// launches in an inout and writes its output on every other launch only is inconsistent, which
// it would not be if every verified sample set its count back (tests/gpu/skipped_work_test.cpp
// found that on the H100).
TEST(OutputVerifier, ALaunchCountKeptInAnInoutDoesNotHideSkippedWork) {
  TempDir dir("kopt-verifier-inout-count");
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8),
            count = tensor("count", Role::inout, 8);
  x.input_path = float_file(dir, "x.bin", 1.0f);
  count.input_path = float_file(dir, "count.bin", 0.0f);
  RunJob job = job_with({x, y, count});
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    FakeDevice dev(job);
    dev.fill(0, 1.0f);
    auto launch = [&] {  // count += 1; y = 2 x on odd counts only
      float c = 0;
      std::memcpy(&c, dev.buffers[2].data(), 4);
      dev.fill(2, c + 1);
      if (static_cast<int>(c + 1) % 2 == 1) dev.fill(1, 2.0f);
    };
    OutputVerifier v(job, BenchOptions{}, seed);
    for (int w = 0; w < 3; ++w) launch();
    ASSERT_FALSE(v.reset_inouts(dev.writer()));
    launch();
    ASSERT_FALSE(v.take_golden(dev.reader()));
    for (std::size_t i = 0; i < BenchOptions{}.rule.min_samples && !v.record().failed(); ++i) {
      bool verify = v.poison_before(i, 1e9);
      if (verify) {
        dev.poison(1);
        ASSERT_FALSE(v.reset_inouts(dev.writer()));
      }
      launch();
      if (verify) {
        ASSERT_FALSE(v.check_sample(dev.reader(), i));
      }
    }
    ASSERT_TRUE(v.record().failed()) << "seed " << seed;
    EXPECT_NE(v.record().failure.find("output 'y'"), std::string::npos) << v.record().failure;
  }
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// The golden launch starts from seed 1's values of the inouts, so the timing job checks it
// against the reference's outputs like any output: a kernel that skips the update there is
// wrong (tests/hacks/inout_skip), one that does it passes.
TEST(OutputVerifier, TheGoldenLaunchsInoutIsCheckedAgainstTheReference) {
  TempDir dir("kopt-verifier-inout-reference");
  JobTensor x = tensor("x", Role::input, 8), acc = tensor("acc", Role::inout, 8);
  x.input_path = float_file(dir, "x.bin", 1.0f);
  acc.input_path = float_file(dir, "acc.bin", 10.0f);
  acc.expected_path = float_file(dir, "acc.expected.bin", 12.0f);
  acc.tolerance = Tolerance{1e-6, 0};
  RunJob job = job_with({x, acc});
  for (bool honest : {true, false}) {
    FakeDevice dev(job);
    dev.fill(1, 30.0f);  // what earlier launches left
    OutputVerifier v(job, BenchOptions{}, 3);
    ASSERT_FALSE(v.reset_inouts(dev.writer()));
    if (honest) dev.fill(1, 12.0f);  // acc += 2 x from seed 1's 10
    ASSERT_FALSE(v.take_golden(dev.reader()));
    EXPECT_TRUE(v.record().reference_checked);
    EXPECT_EQ(v.wrong(), !honest) << v.record().check_failure;
    if (!honest) {
      EXPECT_NE(v.record().check_failure.find("output acc"), std::string::npos)
          << v.record().check_failure;
    }
  }
}

}  // namespace
}  // namespace kopt
