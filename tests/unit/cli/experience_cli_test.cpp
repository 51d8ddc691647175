// `kopt experience` as a user reads it: what recommend says with no situation, the headers of
// its tables, and the gain a record shows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/store/experience_db.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class ExperienceCli : public test::CliFixture {
 protected:
  void SetUp() override {
    test::CliFixture::SetUp();
    if (IsSkipped()) return;
    m_db = (m_cache.path() / "experience.db").string();
    // A run's record: the version gained 1.06x over the champion before it; without the
    // method it would have been 1.24x slower.
    ExperienceRecord r;
    r.family = "softmax";
    r.backend = "opencl";
    r.chip = "pthread-skylake";
    r.bottleneck = "memory-bound";
    r.method = "vectorized_global_loads";
    r.time_before_s = 106e-6;
    r.time_after_s = 100e-6;
    r.speedup = 1.06;
    r.attribution_ms = 0.024;
    r.run_id = "softmax@x";
    r.date = "2026-11-26T00:00:00Z";
    auto db = ExperienceDb::open(m_db);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->add({r}));
  }
  CommandResult experience(std::vector<std::string> args) {
    args.insert(args.begin(), "experience");
    args.insert(args.begin() + 2, {"--db", m_db});
    return test::run_kopt(args);
  }
  std::string m_db;
};

// Issue: "recommend with no arguments says 'no experience yet' over a non-empty DB".
TEST_F(ExperienceCli, RecommendWithoutASituationSaysWhatTheDbHolds) {
  CommandResult r = experience({"recommend"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("no experience"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("holds 1 record\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("softmax (1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pthread-skylake (1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--family F"), std::string::npos) << r.out;
  CommandResult j = experience({"recommend", "--json"});
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["known"]["records"], 1);
  EXPECT_EQ(doc["known"]["families"]["softmax"], 1);
}

// Its table has a header row, and its best is the run's gain, not the ablation ratio.
TEST_F(ExperienceCli, RecommendTableHasAHeaderAndTheRunsGain) {
  CommandResult r = experience({"recommend", "--family", "softmax"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first.rfind("method", 0), 0u) << r.out;
  EXPECT_NE(first.find("best run gain"), std::string::npos) << first;
  EXPECT_NE(r.out.find("1.06x"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("1.24x"), std::string::npos) << r.out;
  CommandResult other = experience({"recommend", "--family", "gemm"});
  EXPECT_NE(other.out.find("no experience for this family"), std::string::npos) << other.out;
  EXPECT_NE(other.out.find("holds 1 record\n"), std::string::npos) << other.out;
}

// list shows the run's gain and, apart, the method's own factor; the chip as recorded.
TEST_F(ExperienceCli, ListShowsTheRunsGainAndTheMethodAlone) {
  CommandResult r = experience({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string header = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(header.find("run gain"), std::string::npos) << header;
  EXPECT_NE(header.find("alone"), std::string::npos) << header;
  std::string row = r.out.substr(r.out.find('\n') + 1);
  EXPECT_NE(row.find("pthread-skylake"), std::string::npos) << row;
  EXPECT_NE(row.find("1.060x"), std::string::npos) << row;
  EXPECT_NE(row.find("1.24x"), std::string::npos) << row;
}

// `experience pitfalls` lists what did not pay for a situation, with the cause; `list` marks
// the record; the table of `recommend` has a column for the predictions' hit rate.
TEST_F(ExperienceCli, PitfallsAreListedWithTheirCause) {
  {
    auto db = ExperienceDb::open(m_db);
    ASSERT_TRUE(db);
    ExperienceRecord r;
    r.family = "softmax";
    r.chip = "pthread-skylake";
    r.bottleneck = "memory-bound";
    r.method = "cp_async_staging";
    r.speedup = 0.9;
    r.cause = PitfallCause::slower;
    r.run_id = "softmax@y";
    r.note = "v2 rejected: ineffective";
    ASSERT_TRUE(db->add({r}));
  }
  CommandResult p = experience({"pitfalls", "--family", "softmax", "--bottleneck", "memory-bound"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("cp_async_staging: slower, 1 time, at worst 0.90x (last: softmax@y"),
            std::string::npos)
      << p.out;
  EXPECT_EQ(p.out.find("vectorized_global_loads"), std::string::npos) << p.out;  // it paid
  CommandResult none = experience({"pitfalls", "--family", "gemm"});
  ASSERT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("no pitfall recorded"), std::string::npos) << none.out;
  CommandResult j = experience({"pitfalls", "--json"});
  auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["pitfalls"].size(), 1u);
  EXPECT_EQ(doc["pitfalls"][0]["cause"], "slower");
  CommandResult l = experience({"list"});
  EXPECT_NE(l.out.find("[pitfall: slower]"), std::string::npos) << l.out;
  CommandResult rec = experience({"recommend", "--family", "softmax", "--chip", "pthread-skylake",
                                  "--bottleneck", "memory-bound"});
  EXPECT_NE(rec.out.find("predicted"), std::string::npos) << rec.out;
  EXPECT_NE(rec.out.find("none judged"), std::string::npos) << rec.out;
}

// `experience playbook` writes the observed section into the playbooks of a folder; a folder
// that is not there is bad input (exit 2) and nothing is written.
TEST_F(ExperienceCli, PlaybookWritesTheObservedSection) {
  fs::path dir = m_cache.path() / "playbooks";
  fs::create_directories(dir);
  ASSERT_TRUE(write_text_atomic(dir / "cuda.toml",
                                "implementation = \"CUDA C++\"\n\n[[bottleneck]]\nclass = "
                                "\"memory-bound\"\nmethods = [\"vectorized_global_loads\"]\n"));
  CommandResult r = experience({"playbook", "--playbooks", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cuda.toml: 1 observed entry"), std::string::npos) << r.out;
  auto text = read_text_file(dir / "cuda.toml");
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("[[observed]]"), std::string::npos) << *text;
  EXPECT_NE(text->find("softmax@x (softmax): 1.06x"), std::string::npos) << *text;
  CommandResult missing = experience({"playbook", "--playbooks", (dir / "nowhere").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.err.find("nowhere"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace kopt
