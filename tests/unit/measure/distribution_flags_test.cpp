// The distribution flags on synthetic series with a known shape, and on series recorded on
// an H100 (tests/fixtures/timing), which are honest and must not be flagged.
#include "kopt/measure/distribution_flags.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "kopt/core/fs.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

bool has(const std::vector<DistributionFlag>& flags, const char* name) {
  for (const auto& f : flags)
    if (f.name == name) return true;
  return false;
}

// A kernel of `center` seconds with Gaussian noise of `rel` and a few slow outliers, as
// timing noise looks: mostly symmetric and small, with rare interruptions on the slow side.
std::vector<double> honest(std::size_t n, double center, double rel, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, rel);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> s;
  for (std::size_t i = 0; i < n; ++i) {
    double t = center * (1.0 + noise(rng));
    if (u(rng) < 0.03) t *= 1.5 + u(rng);  // 3 % interrupted: 1.5x to 2.5x slower
    s.push_back(t);
  }
  return s;
}

TEST(DistributionFlags, AnHonestNoisySeriesIsNotFlagged) {
  for (std::uint32_t seed = 1; seed <= 50; ++seed) {
    for (double rel : {0.002, 0.02, 0.05}) {
      auto s = honest(200, 100e-6, rel, seed);
      auto flags = distribution_flags(s);
      EXPECT_TRUE(flags.empty()) << "seed " << seed << " noise " << rel << ": "
                                 << flag_text(flags.front());
    }
  }
}

TEST(DistributionFlags, AFiftyFiftyTwoLevelSeriesIsBimodal) {
  // A kernel that skips its work on every other launch: 40 us when it skips, 100 us when not.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> s;
  for (int i = 0; i < 100; ++i) s.push_back((i % 2 ? 100e-6 : 40e-6) * (1.0 + noise(rng)));
  auto flags = distribution_flags(s);
  ASSERT_TRUE(has(flags, "bimodal"));
  EXPECT_TRUE(has(flags, "alternating"));  // every other launch
  EXPECT_FALSE(
      has(flags, "fast_tail"));  // half of the samples are no tail: the IQR spans both levels
  const std::string detail = flags.front().detail;
  EXPECT_NE(detail.find("50 % of the samples near 40"), std::string::npos) << detail;
  EXPECT_NE(detail.find("and 50 % near 99"), std::string::npos) << detail;
  EXPECT_EQ(flag_text(flags.front()).rfind("bimodal (two clusters: ", 0), 0u);
}

// The same skipper on a CPU shared with other work: noise of 30 % blurs its two levels into one
// another (no empty gap for bimodal), but every other sample is still the fast one.
TEST(DistributionFlags, AKernelWorkingOnEveryOtherLaunchAlternatesHoweverNoisy) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (int seed = 0; seed < 20; ++seed) {
    std::vector<double> s;
    for (int i = 0; i < 60; ++i)
      s.push_back((i % 2 ? 700e-6 : 330e-6) * std::max(0.3, 1.0 + 0.5 * noise(rng)));
    auto flags = distribution_flags(s);
    EXPECT_TRUE(has(flags, "alternating")) << "seed " << seed;
  }
  // Two levels in a random order are bimodal, not alternating.
  std::vector<double> random_order;
  std::bernoulli_distribution coin(0.5);
  for (int i = 0; i < 100; ++i) random_order.push_back(coin(rng) ? 100e-6 : 40e-6);
  auto flags = distribution_flags(random_order);
  EXPECT_TRUE(has(flags, "bimodal"));
  EXPECT_FALSE(has(flags, "alternating"));
}

// CI's PoCL (2026-12-02): a skipper's 510 samples alternated 0.3-0.6 ms and 0.8-1.4 ms, but for
// stretches of about thirty samples the host ran both levels twice as slow, lifting them above
// the series' median (388 of 509 pairs crossed it: unflagged). Against the median of their
// neighbours they cross 498 times. An honest series with the same drift stays unflagged.
TEST(DistributionFlags, AKernelWorkingOnEveryOtherLaunchAlternatesOnAHostWhoseSpeedDrifts) {
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0.0, 0.1);
  auto drift = [](int i) { return (i / 30) % 3 == 2 ? 2.2 : 1.0; };
  std::vector<double> skipper, honest_series;
  for (int i = 0; i < 510; ++i) {
    skipper.push_back((i % 2 ? 1.0e-3 : 0.42e-3) * drift(i) * std::max(0.5, 1.0 + noise(rng)));
    honest_series.push_back(1.0e-3 * drift(i) * std::max(0.5, 1.0 + noise(rng)));
  }
  auto f = alternating_flag(skipper);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("opposite sides of their neighbours' median"), std::string::npos)
      << f->detail;
  EXPECT_FALSE(alternating_flag(honest_series)) << alternating_flag(honest_series)->detail;
}

// CI's PoCL again (stop 57): a skipper's series so loaded that 0.4-11 ms overlap, only 153 of 213
// pairs across their neighbours' median (0.72). 184 of its 212 inner samples are a peak or a
// trough, where an honest series has about 2/3: the second test holds it.
TEST(DistributionFlags, ASkipperOnAHeavilyLoadedHostAlternatesByItsPeaksAndTroughs) {
  auto text = read_text_file(test::source_dir() / "tests/fixtures/timing/pocl-skipper-loaded.json");
  ASSERT_TRUE(text);
  auto s = nlohmann::json::parse(*text)["samples_s"].get<std::vector<double>>();
  ASSERT_EQ(s.size(), 214u);
  auto f = alternating_flag(s);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("184 of 212 samples a peak or a trough"), std::string::npos)
      << f->detail;
  // Honest series of every length, heavy-tailed and drifting, are not peaks that often: the
  // bound rises above 0.8 for short ones (4 standard deviations of chance).
  std::mt19937 rng(23);
  std::lognormal_distribution<double> spread(0.0, 0.6);
  int flagged = 0;
  for (std::size_t n : {20u, 30u, 60u, 214u, 500u}) {
    for (int k = 0; k < 200; ++k) {
      std::vector<double> honest_series;
      for (std::size_t i = 0; i < n; ++i)
        honest_series.push_back(1e-3 * (1.0 + 0.3 * std::sin(0.05 * i)) * spread(rng));
      if (auto f = alternating_flag(honest_series)) {
        ++flagged;
        ADD_FAILURE() << n << " samples: " << f->detail;
      }
    }
  }
  EXPECT_EQ(flagged, 0);
}

TEST(DistributionFlags, ATenPercentFastTailIsFlagged) {
  auto s = honest(90, 100e-6, 0.01, 3);
  for (int i = 0; i < 10; ++i) s.push_back(45e-6);
  auto flags = distribution_flags(s);
  ASSERT_TRUE(has(flags, "fast_tail")) << (flags.empty() ? "" : flag_text(flags.front()));
  EXPECT_FALSE(has(flags, "bimodal"));  // 10 % is a tail, not a cluster
  auto f = fast_tail_flag(s);
  ASSERT_TRUE(f);
  EXPECT_NE(f->detail.find("10 of 100 samples (10 %) are below "), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("under 0.8 x the median 99"), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("fastest 45 us"), std::string::npos) << f->detail;
}

TEST(DistributionFlags, TheTimersStepAndSlowOutliersAreNotModes) {
  // A 3 us kernel on a timer with 0.5 us steps: two levels, one step apart.
  std::vector<double> steps;
  for (int i = 0; i < 60; ++i) steps.push_back(i % 3 ? 3.0e-6 : 3.5e-6);
  EXPECT_TRUE(distribution_flags(steps).empty());
  // Three levels of a 0.5 us timer step: neighbours one step apart are not two modes.
  std::vector<double> levels;
  for (int i = 0; i < 100; ++i) levels.push_back(i % 5 < 2 ? 2.0e-6 : i % 5 < 4 ? 2.5e-6 : 3.0e-6);
  EXPECT_TRUE(distribution_flags(levels).empty()) << flag_text(distribution_flags(levels).front());
  // 15 % slow samples, far away: slow outliers, not a fast mode.
  std::vector<double> slow;
  for (int i = 0; i < 85; ++i) slow.push_back(100e-6 * (1 + 0.001 * (i % 7)));
  for (int i = 0; i < 15; ++i) slow.push_back(300e-6);
  EXPECT_TRUE(distribution_flags(slow).empty());
}

// A CPU shared with other work: most samples slowed, some not. Wide, but one spread.
TEST(DistributionFlags, ADeviceSharedWithOtherWorkIsNotAFastTail) {
  std::mt19937 rng(11);
  std::gamma_distribution<double> slowdown(2.0, 0.15);
  std::vector<double> s;
  for (int i = 0; i < 300; ++i) s.push_back(1.5e-3 * (1.0 + slowdown(rng)));
  auto flags = distribution_flags(s);
  EXPECT_TRUE(flags.empty()) << flag_text(flags.front());
}

TEST(DistributionFlags, FewSamplesAreNeverFlagged) {
  std::vector<double> s;
  for (int i = 0; i < 19; ++i) s.push_back(i % 2 ? 100e-6 : 10e-6);
  EXPECT_TRUE(distribution_flags(s).empty());
  s.push_back(10e-6);
  EXPECT_FALSE(distribution_flags(s).empty());
}

TEST(DistributionFlags, SeriesRecordedOnAnH100AreNotFlagged) {
  for (const char* file : {"vs-faster.json", "vs-same.json"}) {
    auto text = read_text_file(test::source_dir() / "tests/fixtures/timing" / file);
    ASSERT_TRUE(text) << file;
    auto j = nlohmann::json::parse(*text);
    for (const char* side : {"a", "b"}) {
      auto s = j[side]["samples_s"].get<std::vector<double>>();
      auto flags = distribution_flags(s);
      EXPECT_TRUE(flags.empty()) << file << " " << side << ": " << flag_text(flags.front());
    }
  }
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// A kernel that keeps results keyed by its inputs' content misses on a secret seed's inputs:
// those samples (and the one after each, on inputs changed back) are slow; an honest kernel's
// are not.
TEST(DistributionFlags, SamplesOnASecretSeedsInputsThatAreAllSlowAreFlagged) {
  std::vector<double> cached(40, 10e-6);
  for (std::size_t i : {5, 6, 17, 18})
    cached[i] = 40e-6;  // 5 and 17 on secret inputs, 6 and 18 after them
  std::vector<std::int64_t> secret = {5, 17};
  auto f = secret_slow_flag(cached, secret);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "secret_slow");
  EXPECT_NE(f->detail.find("4.0x"), std::string::npos) << f->detail;
  auto all = distribution_flags(cached, secret);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                          [](const DistributionFlag& x) { return x.name == "secret_slow"; }));
  std::vector<double> honest(40, 10e-6);
  honest[5] = 11e-6;   // a little slower: inputs just written
  honest[17] = 30e-6;  // one slow outlier is noise, not a cache
  EXPECT_FALSE(secret_slow_flag(honest, secret));
  EXPECT_FALSE(
      secret_slow_flag(cached, std::vector<std::int64_t>{5}));  // one secret sample says nothing
}

// A busy machine slows a share of the samples (here three in ten, both secret ones among
// them): not a cache, whose secret samples do the work that every other skips.
TEST(DistributionFlags, SecretSamplesSlowedWithAShareOfTheOthersAreNotFlagged) {
  std::vector<double> loaded(40, 10e-6);
  for (std::size_t i = 0; i < 40; i += 3) loaded[i] = 18e-6;  // 14 of 40, 5 and 17 not among them
  std::vector<std::int64_t> secret = {5, 17};
  std::vector<double> honest = loaded;
  honest[5] = honest[17] = 18e-6;  // past 1.5 x the median of 10 us: the old rule flagged it
  EXPECT_FALSE(secret_slow_flag(honest, secret));
  std::vector<double> cached = loaded;
  cached[5] = cached[17] = 40e-6;  // the real work, past 1.5 x the others' 90th percentile
  auto f = secret_slow_flag(cached, secret);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "secret_slow");
}

// A series cut at its minimum (10 samples, 6 of them "others") still says it: every secret
// sample past 1.5 x the slowest of the others. One slow other among few is not enough.
TEST(DistributionFlags, AShortSeriesFlagsSecretSamplesSlowerThanEveryOther) {
  std::vector<double> cached(10, 10e-6);
  for (std::size_t i : {2, 3, 6, 7}) cached[i] = 40e-6;  // 2 and 6 secret, 3 and 7 after them
  std::vector<std::int64_t> secret = {2, 6};
  auto f = secret_slow_flag(cached, secret);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "secret_slow");
  std::vector<double> noisy = cached;
  noisy[9] = 30e-6;  // one other sample as slow as the secret ones, within 1.5 x: no flag
  EXPECT_FALSE(secret_slow_flag(noisy, secret));
  std::vector<double> honest(10, 10e-6);
  honest[2] = 12e-6;
  honest[6] = 13e-6;
  EXPECT_FALSE(secret_slow_flag(honest, secret));
}

}  // namespace
}  // namespace kopt
