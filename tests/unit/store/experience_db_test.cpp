#include "kopt/store/experience_db.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

ExperienceRecord rec(std::string family, std::string chip, std::string bottleneck,
                     std::string method, double speedup, std::string run = "r1") {
  ExperienceRecord r;
  r.family = std::move(family);
  r.chip = std::move(chip);
  r.bottleneck = std::move(bottleneck);
  r.method = std::move(method);
  r.speedup = speedup;
  r.time_before_s = 100e-6;
  r.time_after_s = 100e-6 / speedup;
  r.run_id = std::move(run);
  r.date = "2026-11-21";
  return r;
}

TEST(ExperienceVerdict, Thresholds) {
  EXPECT_EQ(experience_verdict(1.06), ExperienceVerdict::success);
  EXPECT_EQ(experience_verdict(1.03), ExperienceVerdict::neutral);
  EXPECT_EQ(experience_verdict(1.01), ExperienceVerdict::failure);
  EXPECT_EQ(experience_verdict(0.99), ExperienceVerdict::failure);
  EXPECT_EQ(experience_verdict(0.9), ExperienceVerdict::regression);
}

TEST(ExperienceDb, RankingOnASeededDb) {
  TempDir dir("kopt-exp");
  auto db = ExperienceDb::open(dir.path() / "x.db");
  ASSERT_TRUE(db) << db.error().to_string();
  std::vector<ExperienceRecord> seed = {
      rec("softmax", "sm_90", "memory-bound", "vectorized_global_loads", 1.3, "a"),
      rec("softmax", "sm_90", "memory-bound", "vectorized_global_loads", 1.2, "b"),
      rec("softmax", "sm_90", "memory-bound", "warp_shuffle_reduction", 1.01, "a"),
      rec("softmax", "sm_90", "memory-bound", "warp_shuffle_reduction", 0.97, "b"),
      rec("softmax", "sm_80", "memory-bound", "cp_async", 1.4, "c"),               // another chip
      rec("rmsnorm", "sm_90", "memory-bound", "shared_memory_staging", 1.1, "d"),  // another family
  };
  auto added = db->add(seed);
  ASSERT_TRUE(added);
  EXPECT_EQ(*added, 6u);
  EXPECT_EQ(*db->add(seed), 0u);  // the same experiences again: nothing new
  auto recs = db->recommend("softmax", "sm_90", "memory-bound");
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 4u);
  EXPECT_EQ((*recs)[0].method, "vectorized_global_loads");  // 2 of 2 here
  EXPECT_EQ((*recs)[0].exact_successes, 2u);
  EXPECT_EQ(recs->back().method, "warp_shuffle_reduction");  // failed twice here: demoted, last
  EXPECT_TRUE(recs->back().demoted);
  EXPECT_NE(recs->back().evidence.find("failed repeatedly"), std::string::npos);
  auto cp =
      std::find_if(recs->begin(), recs->end(), [](auto& r) { return r.method == "cp_async"; });
  ASSERT_NE(cp, recs->end());
  EXPECT_EQ(cp->family_successes, 1u);  // evidence from another chip, shown as such
  auto stats = db->stats("method");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->front().key, "vectorized_global_loads");
  EXPECT_FALSE(db->stats("colour"));
  ExperienceFilter f;
  f.verdict = "regression";
  EXPECT_EQ(db->list(f)->size(), 1u);
  f = {};
  f.text = "rmsnorm";
  EXPECT_EQ(db->list(f)->size(), 1u);
}

// Two methods with the same record of successes: the one whose predicted effects keep showing
// ranks first, and recommend says how often each was right (issue: "each method's
// predictions get a hit rate per bottleneck class and chip, shown in recommend and used to
// rank"). Predictions on another chip or at another bottleneck do not count; an ablation's
// ("-M") counts for no method.
TEST(ExperienceDb, PredictionsThatHoldRankAMethodAbove) {
  TempDir dir("kopt-exp");
  auto db = ExperienceDb::open(dir.path() / "x.db");
  ASSERT_TRUE(db) << db.error().to_string();
  ASSERT_TRUE(db->add({rec("softmax", "sm_90", "memory-bound", "a_method", 1.2, "r1"),
                       rec("softmax", "sm_90", "memory-bound", "b_method", 1.2, "r1")}));
  auto plain = db->recommend("softmax", "sm_90", "memory-bound");
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->size(), 2u);
  EXPECT_EQ((*plain)[0].method, "a_method");       // a tie, broken by name
  EXPECT_EQ((*plain)[0].rank, (*plain)[0].score);  // nothing judged: the rank is the score
  EXPECT_FALSE((*plain)[0].hit_rate());
  std::vector<PredictionRecord> preds;
  auto add = [&](const std::string& method, const std::string& chip, const std::string& bn,
                 PredictionVerdict v, int n) {
    for (int i = 0; i < n; ++i) {
      PredictionRecord r;
      r.family = "softmax";
      r.chip = chip;
      r.bottleneck = bn;
      r.methods = {method};
      r.prediction = *parse_prediction("time:down");
      r.prediction.branch = "loop";
      r.prediction.verdict = v;
      r.run_id = method + chip + bn + std::to_string(i) + std::string(name_of(v));
      r.date = "2026-11-26";
      preds.push_back(r);
    }
  };
  add("a_method", "sm_90", "memory-bound", PredictionVerdict::refuted, 3);
  add("a_method", "sm_90", "memory-bound", PredictionVerdict::unmeasured, 2);  // not judged
  add("a_method", "sm_80", "memory-bound", PredictionVerdict::confirmed, 5);   // another chip
  add("a_method", "sm_90", "compute-bound", PredictionVerdict::confirmed, 5);  // another class
  add("b_method", "sm_90", "memory-bound", PredictionVerdict::confirmed, 2);
  add("b_method", "sm_90", "memory-bound", PredictionVerdict::fell_short, 1);
  add("-a_method", "sm_90", "memory-bound", PredictionVerdict::confirmed, 4);  // an ablation
  ASSERT_TRUE(db->add_predictions(preds));
  auto recs = db->recommend("softmax", "sm_90", "memory-bound");
  ASSERT_TRUE(recs);
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ((*recs)[0].method, "b_method");
  EXPECT_EQ((*recs)[0].predictions_judged, 3u);
  EXPECT_EQ((*recs)[0].predictions_confirmed, 2u);
  EXPECT_EQ((*recs)[1].method, "a_method");
  EXPECT_EQ((*recs)[1].predictions_judged, 3u);
  EXPECT_EQ((*recs)[1].predictions_confirmed, 0u);
  EXPECT_DOUBLE_EQ(*(*recs)[1].hit_rate(), 0.0);
  EXPECT_EQ((*recs)[0].score, (*recs)[1].score);  // the chance of success is the same
  EXPECT_GT((*recs)[0].rank, (*recs)[1].rank);
  EXPECT_NE((*recs)[1].evidence.find("its predictions: 0 of 3 confirmed"), std::string::npos)
      << (*recs)[1].evidence;
}

TEST(ExperienceDb, MergeAndSyncRoundTrips) {
  TempDir dir("kopt-exp");
  auto a = ExperienceDb::open(dir.path() / "a.db");
  auto b = ExperienceDb::open(dir.path() / "b.db");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->add({rec("gemm", "sm_90", "compute-bound", "tensor_cores", 3.0, "x")}));
  ASSERT_TRUE(b->add({rec("gemm", "sm_90", "compute-bound", "tensor_cores", 3.0, "x"),
                      rec("gemm", "sm_90", "compute-bound", "ldmatrix", 1.1, "y")}));
  EXPECT_EQ(*a->merge(dir.path() / "b.db"), 1u);  // the shared record is not duplicated
  EXPECT_EQ(*a->merge(dir.path() / "b.db"), 0u);
  ASSERT_EQ(*a->export_jsonl(dir.path() / "lessons.jsonl"), 2u);
  auto c = ExperienceDb::open(dir.path() / "c.db");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->import_jsonl(dir.path() / "lessons.jsonl"), 2u);
  EXPECT_EQ(*c->import_jsonl(dir.path() / "lessons.jsonl"), 0u);
  ExperienceFilter all;
  auto x = a->list(all), y = c->list(all);
  ASSERT_TRUE(x && y);
  ASSERT_EQ(x->size(), y->size());
  for (std::size_t i = 0; i < x->size(); ++i) EXPECT_EQ((*x)[i].uid, (*y)[i].uid);
}

TEST(ExperienceDb, AMalformedSyncLineImportsNothing) {
  TempDir dir("kopt-exp");
  auto db = ExperienceDb::open(dir.path() / "d.db");
  ASSERT_TRUE(db);
  std::ofstream(dir.path() / "bad.jsonl")
      << to_json(rec("a", "sm_90", "b", "m", 1.2)).dump() << "\n{\"family\": \"a\"\n";
  auto r = db->import_jsonl(dir.path() / "bad.jsonl");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().line, 2);
  EXPECT_NE(r.error().to_string().find("bad.jsonl:2"), std::string::npos);
  EXPECT_TRUE(db->list({})->empty());  // the good first line was not imported either
  std::ofstream(dir.path() / "field.jsonl")
      << "{\"family\": \"a\", \"chip\": \"sm_90\", \"speedup\": 1.1}\n";
  auto missing = db->import_jsonl(dir.path() / "field.jsonl");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "method");
}

TEST(ExperienceDb, NotOursOrNewerIsRefusedAndLeftUntouched) {
  TempDir dir("kopt-exp");
  fs::path text = dir.path() / "notes.db";
  ASSERT_TRUE(write_text_atomic(text, "my notes"));
  auto t = ExperienceDb::open(text);
  ASSERT_FALSE(t);
  EXPECT_EQ(*read_text_file(text), "my notes");
  fs::path other = dir.path() / "other.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto o = ExperienceDb::open(other);
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().message.find("not a kopt experience DB"), std::string::npos);
  fs::path newer = dir.path() / "newer.db";
  ASSERT_TRUE(ExperienceDb::open(newer));
  ASSERT_EQ(sqlite3_open(newer.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "UPDATE meta SET value = '99' WHERE key = 'schema_version';", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  auto n = ExperienceDb::open(newer);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("newer kopt"), std::string::npos);
}

TEST(ExperienceDb, ConcurrentWritersLoseNothing) {
  TempDir dir("kopt-exp");
  fs::path path = dir.path() / "shared.db";
  ASSERT_TRUE(ExperienceDb::open(path));
  constexpr int k_writers = 4, k_each = 60;
  std::vector<pid_t> children;
  for (int w = 0; w < k_writers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto db = ExperienceDb::open(path);
      if (!db) _exit(2);
      for (int i = 0; i < k_each; ++i)  // one transaction per record: the most lock traffic
        if (!db->add({rec("f", "sm_90", "b", "m" + std::to_string(i % 5), 1.0 + i * 0.01,
                          "w" + std::to_string(w) + "-" + std::to_string(i))}))
          _exit(3);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }
  auto db = ExperienceDb::open(path);
  ASSERT_TRUE(db);
  ExperienceFilter all;
  all.limit = 100000;
  EXPECT_EQ(db->list(all)->size(), static_cast<std::size_t>(k_writers * k_each));
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  char* err = nullptr;
  std::string result;
  sqlite3_exec(
      raw, "PRAGMA integrity_check;",
      [](void* out, int, char** v, char**) {
        *static_cast<std::string*>(out) = v[0];
        return 0;
      },
      &result, &err);
  sqlite3_close(raw);
  EXPECT_EQ(result, "ok");
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(ExperienceDb, ASchemaOneDbIsMigratedWithItsRecords) {
  TempDir dir("kopt-exp");
  fs::path path = dir.path() / "v1.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  // Schema 1 as kopt wrote it, with one record.
  const char* v1 = R"SQL(
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta VALUES ('magic', 'kopt-experience'), ('schema_version', '1');
    CREATE TABLE experience (id INTEGER PRIMARY KEY AUTOINCREMENT, uid TEXT NOT NULL UNIQUE,
      family TEXT NOT NULL, backend TEXT NOT NULL, chip TEXT NOT NULL, bottleneck TEXT NOT NULL,
      method TEXT NOT NULL, params TEXT NOT NULL, time_before_s REAL NOT NULL, time_after_s REAL NOT NULL,
      speedup REAL NOT NULL, verdict TEXT NOT NULL, sass_verdict TEXT NOT NULL, attribution_ms REAL NOT NULL,
      run_id TEXT NOT NULL, date TEXT NOT NULL, note TEXT NOT NULL);
    INSERT INTO experience VALUES (1, 'u1', 'softmax', 'cuda', 'sm_90', 'memory-bound', 'vectorized_global_loads',
      '{}', 2e-5, 1.8e-5, 1.11, 'success', 'verified', 0.002, 'old-run', '2026-01-01', '');
  )SQL";
  ASSERT_EQ(sqlite3_exec(raw, v1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto db = ExperienceDb::open(path);
  ASSERT_TRUE(db) << db.error().to_string();
  auto all = db->list({});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].run_id, "old-run");
  EXPECT_EQ((*all)[0].origin, "run");  // the new column's default
  ASSERT_TRUE(db->add({rec("softmax", "sm_90", "memory-bound", "tma", 1.2)}));
  EXPECT_EQ(db->list({})->size(), 2u);
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::string version;
  sqlite3_exec(
      raw, "SELECT value FROM meta WHERE key = 'schema_version';",
      [](void* out, int, char** v, char**) {
        *static_cast<std::string*>(out) = v[0];
        return 0;
      },
      &version, nullptr);
  sqlite3_close(raw);
  EXPECT_EQ(version, std::to_string(k_experience_schema_version));
}

}  // namespace
}  // namespace kopt
