// The verification of timed launches where the timer draws the inputs where the kernel runs
// (OutputVerifier's device_draw, backend/cuda/device_draw.hpp): secret-seed samples from the
// secret seed's recipe and a mix drawn at run time, seed 1's values drawn again after them, no
// input file read, and no bound on the inputs' size (no host copy of either seed's exists).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "kopt/backend/output_verifier.hpp"
#include "kopt/problem/tensor_draw.hpp"
#include "verifier_fakes.hpp"

using namespace kopt::fakes;

namespace kopt {
namespace {

DrawRecipe constant(double v) {
  return DrawRecipe{InitKind::constant, v, 0.0, 0, DType::f32};
}

// A fake device's draw: the recipe's values into the tensor's bytes, where a mix takes them.
struct Drawn {
  std::uint64_t mix = 0;
  double value = 0;
};
DrawTensor drawer(FakeDevice& dev, std::vector<Drawn>& calls) {
  return [&dev, &calls](std::size_t i, const DrawRecipe& r,
                        std::uint64_t mix) -> std::optional<RunResult> {
    calls.push_back({mix, r.a});
    std::vector<std::byte> all(dev.buffers[i].size());
    const std::size_t n = all.size() / dtype_size(r.dtype);
    draw_values(r, all.data(), 0, n);
    const std::size_t w = dtype_size(r.dtype);
    for (std::size_t e = 0; e < n; ++e)
      if (mix == 0 || mix_takes(mix, e))
        std::memcpy(dev.buffers[i].data() + e * w, all.data() + e * w, w);
    return std::nullopt;
  };
}

TEST(OutputVerifierDraw, SecretSamplesAreDrawnFromTheSecretRecipeWithNoInputFile) {
  TempDir dir("kopt-verifier-draw");
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.draw = constant(1.0);         // seed 1: no input_path, no secret_input_path
  x.secret_draw = constant(3.0);  // the secret seed
  x.checksum = draw_token(*x.draw);
  y.secret_expected_path = float_file(dir, "y.secret.bin", 6.0f);
  y.tolerance = Tolerance{1e-6, 0};
  RunJob job = job_with({x, y});
  for (bool honest : {true, false}) {
    FakeDevice dev(job);
    std::vector<Drawn> calls;
    DrawTensor draw = drawer(dev, calls);
    ASSERT_FALSE(draw(0, *x.draw, 0));  // as prepare_launch draws it
    calls.clear();
    auto launch = [&] {  // y = 2x, or seed 1's answer kept from an earlier call
      float in = 0;
      std::memcpy(&in, dev.buffers[0].data(), 4);
      dev.fill(1, honest ? 2 * in : 2.0f);
    };
    OutputVerifier v(job, BenchOptions{}, 11, true, true, true);
    ASSERT_FALSE(v.note_inputs(dev.hasher()));
    launch();
    ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher(), dev.comparer()));
    // The secret seed's reference outputs go to the device before the samples, once.
    ASSERT_EQ(dev.preloaded.size(), 1u);
    EXPECT_NE(dev.preloaded.begin()->first.find("y.secret.bin"), std::string::npos);
    std::set<std::size_t> mixes;
    for (std::size_t i = 0; i < 40 && !v.record().failed(); ++i) {
      bool verify = v.poison_before(i, 1e9);
      bool on_secret = verify && v.secret_before(i);
      if (on_secret) {
        ASSERT_FALSE(v.write_inputs(dev.writer(), i, draw));
      }
      if (on_secret && honest) {
        std::set<float> values;
        for (std::size_t e = 0; e < 8; ++e) {
          float f = 0;
          std::memcpy(&f, dev.buffers[0].data() + 4 * e, 4);
          values.insert(f);
        }
        if (values.size() == 2) mixes.insert(i);  // the mix: each element from one seed
        EXPECT_TRUE(values.count(3.0f)) << "sample " << i;
      }
      if (verify) dev.poison(1);
      launch();
      if (verify) {
        ASSERT_FALSE(v.check_sample(dev.reader(), i, dev.hasher(), dev.comparer()));
      }
      if (on_secret) {
        ASSERT_FALSE(v.write_inputs(dev.writer(), std::nullopt, draw));
      }
    }
    if (honest) {
      EXPECT_FALSE(v.record().failed()) << v.record().failure;
      ASSERT_EQ(v.record().secret_samples.size(), 2u);
      // The secret seed's own sample is one draw of its recipe; the mix, seed 1's drawn whole
      // and the secret seed's over it where a mask drawn at run time says; seed 1's after each.
      ASSERT_EQ(calls.size(), 5u);
      EXPECT_EQ(calls[0].value, 3.0);
      EXPECT_EQ(calls[0].mix, 0u);
      EXPECT_EQ(calls[1].value, 1.0);
      EXPECT_EQ(calls[2].value, 1.0);
      EXPECT_EQ(calls[2].mix, 0u);
      EXPECT_EQ(calls[3].value, 3.0);
      EXPECT_NE(calls[3].mix, 0u);
      EXPECT_EQ(calls[4].value, 1.0);
      EXPECT_EQ(mixes.size(), 1u);
      EXPECT_EQ(*mixes.begin(), static_cast<std::size_t>(v.record().secret_samples.back()));
      EXPECT_EQ(dev.reads, 0);  // compared and hashed where they are
    } else {
      ASSERT_TRUE(v.record().failed());
      EXPECT_NE(v.record().failure.find("returned answers it did not compute"), std::string::npos)
          << v.record().failure;
    }
  }
}

// The secret seed's reference outputs go to the device once: a second variant's verifier finds
// them there, uploads nothing and reads no host copy, and its secret sample is still judged.
TEST(OutputVerifierDraw, ASecondVariantFindsTheSecretOutputsOnTheDevice) {
  TempDir dir("kopt-verifier-draw");
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.draw = constant(1.0);
  x.secret_draw = constant(3.0);
  x.checksum = draw_token(*x.draw);
  y.secret_expected_path = float_file(dir, "y.secret.bin", 6.0f);
  y.tolerance = Tolerance{1e-6, 0};
  RunJob job = job_with({x, y});
  FakeDevice dev(job);
  std::vector<Drawn> calls;
  DrawTensor draw = drawer(dev, calls);
  for (int variant = 0; variant < 2; ++variant) {
    ASSERT_FALSE(draw(0, *x.draw, 0));
    OutputVerifier v(job, BenchOptions{}, 11 + variant, true, true, true);
    ASSERT_FALSE(v.note_inputs(dev.hasher()));
    dev.fill(1, 2.0f);
    ASSERT_FALSE(v.take_golden(dev.reader(), dev.hasher(), dev.comparer()));
    for (std::size_t i = 0; i < 40 && !v.record().failed(); ++i) {
      bool verify = v.poison_before(i, 1e9);
      bool on_secret = verify && v.secret_before(i);
      if (on_secret) {
        ASSERT_FALSE(v.write_inputs(dev.writer(), i, draw));
      }
      if (verify) dev.poison(1);
      float in = 0;
      std::memcpy(&in, dev.buffers[0].data(), 4);
      dev.fill(1, 2 * in);
      if (verify) {
        ASSERT_FALSE(v.check_sample(dev.reader(), i, dev.hasher(), dev.comparer()));
      }
      if (on_secret) {
        ASSERT_FALSE(v.write_inputs(dev.writer(), std::nullopt, draw));
      }
    }
    EXPECT_FALSE(v.record().failed()) << v.record().failure;
    EXPECT_EQ(v.record().secret_samples.size(), 2u);
  }
  ASSERT_EQ(dev.preloaded.size(), 1u);
  EXPECT_EQ(dev.preloaded.begin()->second, 1);  // once, by the first variant
  EXPECT_EQ(dev.uploaded.begin()->second, 2);   // a secret sample judged in each variant
  EXPECT_EQ(dev.without_host, 2);               // neither read the file: the first had preloaded it
}

// Inputs of GBs: host copies of both seeds bound the secret samples where the inputs are files;
// drawn where the kernel runs, nothing is copied, so they run whatever the size.
TEST(OutputVerifierDraw, DrawnInputsOfGigabytesStillGetSecretSamples) {
  const std::size_t big = std::size_t{1} << 29;  // 2 GiB of f32; nothing is allocated here
  JobTensor x = tensor("x", Role::input, big), y = tensor("y", Role::output, 8);
  x.draw = constant(1.0);
  x.secret_draw = constant(3.0);
  x.input_path = "/nowhere/x.bin";
  x.secret_input_path = "/nowhere/x.secret.bin";
  y.secret_expected_path = "/nowhere/y.secret.bin";
  RunJob job = job_with({x, y});
  auto secret_samples = [&](bool device_draw) {
    OutputVerifier v(job, BenchOptions{}, 5, true, true, device_draw);
    std::size_t n = 0;
    for (std::size_t i = 0; i < 40; ++i) n += v.secret_before(i);
    return std::pair{n, v.record().note};
  };
  auto [from_files, note] = secret_samples(false);
  EXPECT_EQ(from_files, 0u);
  EXPECT_NE(note.find("no secret-seed sample"), std::string::npos) << note;
  auto [drawn, none] = secret_samples(true);
  EXPECT_EQ(drawn, 2u);
  EXPECT_EQ(none.find("secret"), std::string::npos) << none;
  // Without the secret seed's recipe there is nothing to draw them from.
  job.tensors[0].secret_draw.reset();
  EXPECT_EQ(secret_samples(true).first, 0u);
}

// A timer that said it draws the inputs but gave no draw, or a file of kopt's it cannot read,
// is the environment's failure: never the kernel's verdict.
TEST(OutputVerifierDraw, NoDrawForADrawnInputIsTheEnvironmentsFailure) {
  JobTensor x = tensor("x", Role::input, 8), y = tensor("y", Role::output, 8);
  x.draw = constant(1.0);
  RunJob job = job_with({x, y});
  OutputVerifier drawn(job, BenchOptions{}, 3, true, true, true);
  FakeDevice dev(job);
  auto f = drawn.write_inputs(dev.writer());
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->environment);
  x.input_path = "/nowhere/x.bin";
  RunJob files = job_with({x, y});
  OutputVerifier from_files(files, BenchOptions{}, 3, true, true, false);
  f = from_files.write_inputs(dev.writer());
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->environment);
  EXPECT_NE(f->error.find("cannot read the seed's input x"), std::string::npos) << f->error;
}

}  // namespace
}  // namespace kopt
