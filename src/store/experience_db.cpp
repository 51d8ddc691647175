#include "kopt/store/experience_db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "kopt/core/hash.hpp"
#include "sqlite_statement.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;
using sqlite::db_error;
using sqlite::exec;
using sqlite::Statement;

namespace {

const char* k_magic = "kopt-experience";

const char* k_schema = R"SQL(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experience (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid TEXT NOT NULL UNIQUE,
  family TEXT NOT NULL, backend TEXT NOT NULL, chip TEXT NOT NULL, bottleneck TEXT NOT NULL,
  method TEXT NOT NULL, params TEXT NOT NULL,
  time_before_s REAL NOT NULL, time_after_s REAL NOT NULL, speedup REAL NOT NULL,
  verdict TEXT NOT NULL, sass_verdict TEXT NOT NULL, attribution_ms REAL NOT NULL,
  run_id TEXT NOT NULL, date TEXT NOT NULL, note TEXT NOT NULL, origin TEXT NOT NULL DEFAULT 'run',
  cause TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS experience_context ON experience (family, chip, bottleneck, method);
CREATE TABLE IF NOT EXISTS predictions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid TEXT NOT NULL UNIQUE,
  family TEXT NOT NULL, chip TEXT NOT NULL, bottleneck TEXT NOT NULL, methods TEXT NOT NULL,
  hypothesis TEXT NOT NULL, prediction TEXT NOT NULL, metric TEXT NOT NULL, direction TEXT NOT NULL,
  amount REAL, relative INTEGER NOT NULL, before REAL, after REAL, verdict TEXT NOT NULL, note TEXT NOT NULL,
  accepted INTEGER NOT NULL, run_id TEXT NOT NULL, date TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS predictions_context ON predictions (family, chip, metric);
)SQL";

const char* k_columns =
    "id, uid, family, backend, chip, bottleneck, method, params, time_before_s, time_after_s, "
    "speedup, verdict, "
    "sass_verdict, attribution_ms, run_id, date, note, origin, cause";

ExperienceRecord row(const Statement& s) {
  ExperienceRecord r;
  r.id = s.integer(0);
  r.uid = s.text(1);
  r.family = s.text(2);
  r.backend = s.text(3);
  r.chip = s.text(4);
  r.bottleneck = s.text(5);
  r.method = s.text(6);
  try {
    r.params = json::parse(s.text(7)).get<ParamPoint>();
  } catch (const std::exception&) {
  }
  r.time_before_s = s.real(8);
  r.time_after_s = s.real(9);
  r.speedup = s.real(10);
  r.verdict = parse_enum<ExperienceVerdict>(s.text(11)).value_or(experience_verdict(r.speedup));
  r.sass_verdict = s.text(12);
  r.attribution_ms = s.real(13);
  r.run_id = s.text(14);
  r.date = s.text(15);
  r.note = s.text(16);
  r.origin = s.text(17);
  r.cause = parse_enum<PitfallCause>(s.text(18)).value_or(PitfallCause::none);
  return r;
}

}  // namespace

ExperienceVerdict experience_verdict(double speedup) {
  double gain = speedup - 1.0;
  if (gain > 0.05) return ExperienceVerdict::success;
  if (gain >= 0.02) return ExperienceVerdict::neutral;
  if (gain >= -0.02) return ExperienceVerdict::failure;
  return ExperienceVerdict::regression;
}

std::string experience_uid(const ExperienceRecord& r) {
  Sha256 h;
  h.field("kopt-experience-v1")
      .field(r.family)
      .field(r.backend)
      .field(r.chip)
      .field(r.bottleneck)
      .field(r.method);
  h.field(json(r.params).dump())
      .field(std::to_string(r.time_before_s))
      .field(std::to_string(r.time_after_s));
  h.field(r.run_id).field(r.date);
  return h.hex().substr(0, 32);
}

fs::path default_experience_db() {
  if (const char* v = std::getenv("KOPT_EXPERIENCE_DB"); v && *v) return v;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return fs::path(x) / "kopt" / "experience.db";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local/share/kopt/experience.db";
  return fs::temp_directory_path() / "kopt-experience.db";
}

ExperienceDb::ExperienceDb(std::unique_ptr<Handle> h, fs::path path)
    : m_h(std::move(h)), m_path(std::move(path)) {}
ExperienceDb::ExperienceDb(ExperienceDb&&) noexcept = default;
ExperienceDb& ExperienceDb::operator=(ExperienceDb&&) noexcept = default;
ExperienceDb::~ExperienceDb() = default;

Expected<ExperienceDb> ExperienceDb::open(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  bool existed = fs::exists(path);
  auto h = std::make_unique<Handle>();
  if (sqlite3_open_v2(path.c_str(), &h->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    return Unexpected(db_error(h->db, "cannot open the experience DB", path));
  sqlite3_busy_timeout(h->db, 30000);  // other writers hold the lock briefly: wait, do not fail
  // Is it ours? An existing file must be SQLite with our meta table and magic.
  if (existed) {
    Statement magic(h->db, "SELECT value FROM meta WHERE key = 'magic'");
    if (!magic.ok() || magic.step() != SQLITE_ROW || magic.text(0) != k_magic)
      return Unexpected(bad_input("not a kopt experience DB (no kopt meta table); left untouched",
                                  path.string()));
    Statement version(h->db, "SELECT value FROM meta WHERE key = 'schema_version'");
    int v = version.ok() && version.step() == SQLITE_ROW ? std::atoi(version.text(0).c_str()) : 0;
    if (v > k_experience_schema_version)
      return Unexpected(bad_input(
          "written by a newer kopt (schema " + std::to_string(v) + "; this kopt reads up to " +
              std::to_string(k_experience_schema_version) + "); left untouched",
          path.string(), 0, "schema_version"));
    if (v < k_experience_schema_version) {
      // Migrations, oldest first, in one transaction: the file is either migrated or unchanged.
      bool ok = exec(h->db, "BEGIN IMMEDIATE;");
      if (ok && v < 2)
        ok = exec(h->db, "ALTER TABLE experience ADD COLUMN origin TEXT NOT NULL DEFAULT 'run';");
      if (ok && v < 4)
        ok = exec(h->db, "ALTER TABLE experience ADD COLUMN cause TEXT NOT NULL DEFAULT '';");
      if (ok)
        ok =
            exec(h->db, ("UPDATE meta SET value = '" + std::to_string(k_experience_schema_version) +
                         "' WHERE key = 'schema_version';")
                            .c_str());
      if (!ok || !exec(h->db, "COMMIT;")) {
        Error e = db_error(h->db, "cannot migrate from schema " + std::to_string(v), path);
        exec(h->db, "ROLLBACK;");
        return Unexpected(e);
      }
    }
  }
  if (!exec(h->db, "PRAGMA journal_mode=WAL;") || !exec(h->db, "PRAGMA synchronous=NORMAL;"))
    return Unexpected(db_error(h->db, "cannot set the journal mode", path));
  if (!exec(h->db, "BEGIN IMMEDIATE;") || !exec(h->db, k_schema) ||
      !exec(h->db, ("INSERT OR IGNORE INTO meta VALUES ('magic', '" + std::string(k_magic) + "');")
                       .c_str()) ||
      !exec(h->db, ("INSERT OR IGNORE INTO meta VALUES ('schema_version', '" +
                    std::to_string(k_experience_schema_version) + "');")
                       .c_str()) ||
      !exec(h->db, "COMMIT;")) {
    exec(h->db, "ROLLBACK;");
    return Unexpected(db_error(h->db, "cannot create the schema", path));
  }
  return ExperienceDb(std::move(h), path);
}

Expected<std::size_t> ExperienceDb::add(std::vector<ExperienceRecord> records) {
  auto bind = [](Statement& ins, ExperienceRecord& r) {
    if (!r.verdict) r.verdict = experience_verdict(r.speedup);
    if (r.uid.empty()) r.uid = experience_uid(r);
    ins.bind(1, r.uid);
    ins.bind(2, r.family);
    ins.bind(3, r.backend);
    ins.bind(4, r.chip);
    ins.bind(5, r.bottleneck);
    ins.bind(6, r.method);
    ins.bind(7, json(r.params).dump());
    ins.bind(8, r.time_before_s);
    ins.bind(9, r.time_after_s);
    ins.bind(10, r.speedup);
    ins.bind(11, std::string(name_of(*r.verdict)));
    ins.bind(12, r.sass_verdict);
    ins.bind(13, r.attribution_ms);
    ins.bind(14, r.run_id);
    ins.bind(15, r.date);
    ins.bind(16, r.note);
    ins.bind(17, r.origin);
    ins.bind(18, std::string(name_of(r.cause)));
  };
  return sqlite::insert_all(
      m_h->db,
      "INSERT OR IGNORE INTO experience (uid, family, backend, chip, bottleneck, method, params, "
      "time_before_s, time_after_s, speedup, verdict, sass_verdict, attribution_ms, run_id, date, "
      "note, origin, cause) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      records, bind, m_path, "a record");
}

Expected<std::vector<ExperienceRecord>> ExperienceDb::list(const ExperienceFilter& f) const {
  std::string sql =
      std::string("SELECT ") + k_columns +
      " FROM experience WHERE (?1 = '' OR family = ?1) AND (?2 = '' OR chip = ?2) AND (?3 = '' OR "
      "bottleneck = ?3) AND (?4 = '' OR method = ?4) AND (?5 = '' OR verdict = ?5) AND (?6 = '' OR "
      "instr(family || ' ' || chip || ' ' || bottleneck || ' ' || method || ' ' || note || ' ' || "
      "params, ?6) > 0) "
      "ORDER BY id DESC LIMIT ?7";
  Statement s(m_h->db, sql.c_str());
  if (!s.ok()) return Unexpected(db_error(m_h->db, "cannot query", m_path));
  s.bind(1, f.family);
  s.bind(2, f.chip);
  s.bind(3, f.bottleneck);
  s.bind(4, f.method);
  s.bind(5, f.verdict);
  s.bind(6, f.text);
  s.bind(7, static_cast<std::int64_t>(f.limit));
  std::vector<ExperienceRecord> out;
  while (s.step() == SQLITE_ROW) out.push_back(row(s));
  return out;
}

Expected<std::vector<Recommendation>> ExperienceDb::recommend(const std::string& family,
                                                              const std::string& chip,
                                                              const std::string& bottleneck) const {
  Statement s(m_h->db,
              "SELECT method, family, chip, bottleneck, verdict, speedup FROM experience "
              "WHERE family = ?1 OR bottleneck = ?3");
  if (!s.ok()) return Unexpected(db_error(m_h->db, "cannot query", m_path));
  s.bind(1, family);
  s.bind(3, bottleneck);
  std::map<std::string, Recommendation> by;
  while (s.step() == SQLITE_ROW) {
    Recommendation& r = by[s.text(0)];
    r.method = s.text(0);
    bool same_family = s.text(1) == family, same_chip = s.text(2) == chip,
         same_bn = s.text(3) == bottleneck;
    bool success = s.text(4) == "success";
    if (same_family && same_chip && same_bn) {
      ++r.exact_trials;
      r.exact_successes += success;
    } else if (same_family) {
      ++r.family_trials;
      r.family_successes += success;
    } else if (same_bn) {
      ++r.bottleneck_trials;
      r.bottleneck_successes += success;
    }
    r.best_speedup = std::max(r.best_speedup, s.real(5));
  }
  // Same-chip failures on this family, whatever the bottleneck, demote.
  Statement fails(
      m_h->db,
      "SELECT method, SUM(verdict = 'success'), SUM(verdict IN ('failure', 'regression')) "
      "FROM experience WHERE family = ?1 AND chip = ?2 GROUP BY method");
  fails.bind(1, family);
  fails.bind(2, chip);
  while (fails.step() == SQLITE_ROW)
    if (fails.integer(1) == 0 && fails.integer(2) >= 2) {
      by[fails.text(0)].method = fails.text(0);
      by[fails.text(0)].demoted = true;
    }
  auto hits = prediction_hits(chip, bottleneck);
  if (!hits) return Unexpected(hits.error());
  for (const auto& [m, h] : *hits)
    if (auto it = by.find(m); it != by.end()) {
      it->second.predictions_judged = h.first;
      it->second.predictions_confirmed = h.second;
    }
  std::vector<Recommendation> out;
  for (auto& [m, r] : by) {
    // Laplace-smoothed success rate; other contexts count half and a quarter as much.
    double w_succ = r.exact_successes + 0.5 * r.family_successes + 0.25 * r.bottleneck_successes;
    double w_trials = r.exact_trials + 0.5 * r.family_trials + 0.25 * r.bottleneck_trials;
    r.score = (w_succ + 1) / (w_trials + 2);
    r.evidence = std::to_string(r.exact_successes) + " of " + std::to_string(r.exact_trials) +
                 " here, " + std::to_string(r.family_successes) + " of " +
                 std::to_string(r.family_trials) + " on other chips, " +
                 std::to_string(r.bottleneck_successes) + " of " +
                 std::to_string(r.bottleneck_trials) + " in other families" +
                 (r.demoted ? "; failed repeatedly on this family and chip" : "");
    double hit = (static_cast<double>(r.predictions_confirmed) + 1) /
                 (static_cast<double>(r.predictions_judged) + 2);
    r.rank = r.score * (1 + hit) / 1.5;
    if (r.predictions_judged > 0)
      r.evidence +=
          fmt::format("; its predictions: {} of {} confirmed on this chip at this bottleneck",
                      r.predictions_confirmed, r.predictions_judged);
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const Recommendation& a, const Recommendation& b) {
    if (a.demoted != b.demoted) return !a.demoted;
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.method < b.method;
  });
  return out;
}

Expected<std::vector<MethodStats>> ExperienceDb::stats(const std::string& by) const {
  if (by != "method" && by != "family" && by != "bottleneck" && by != "chip")
    return Unexpected(bad_input("stats by '" + by + "': method, family, bottleneck or chip"));
  std::string sql =
      "SELECT " + by +
      ", COUNT(*), SUM(verdict = 'success'), SUM(verdict = 'regression'), AVG(speedup) "
      "FROM experience GROUP BY " +
      by + " ORDER BY COUNT(*) DESC, SUM(verdict = 'success') DESC, 1";
  Statement s(m_h->db, sql.c_str());
  if (!s.ok()) return Unexpected(db_error(m_h->db, "cannot query", m_path));
  std::vector<MethodStats> out;
  while (s.step() == SQLITE_ROW)
    out.push_back(MethodStats{s.text(0), static_cast<std::size_t>(s.integer(1)),
                              static_cast<std::size_t>(s.integer(2)),
                              static_cast<std::size_t>(s.integer(3)), s.real(4)});
  return out;
}

Expected<std::size_t> ExperienceDb::merge(const fs::path& other) {
  if (!fs::exists(other)) return Unexpected(bad_input("no such file", other.string()));
  auto o = ExperienceDb::open(other);
  if (!o) return Unexpected(o.error());
  ExperienceFilter all;
  all.limit = static_cast<std::size_t>(-1) >> 1;
  auto records = o->list(all);
  if (!records) return Unexpected(records.error());
  for (auto& r : *records) r.origin = "import";
  return add(*records);
}

Expected<std::size_t> ExperienceDb::export_jsonl(const fs::path& file) const {
  ExperienceFilter all;
  all.limit = static_cast<std::size_t>(-1) >> 1;
  auto records = list(all);
  if (!records) return Unexpected(records.error());
  std::reverse(records->begin(), records->end());  // oldest first: appends stay diff-friendly
  std::string text;
  for (const auto& r : *records) text += to_json(r).dump() + "\n";
  fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) return Unexpected(bad_input("cannot write", file.string()));
  }
  fs::rename(tmp, file);
  return records->size();
}

Expected<std::size_t> ExperienceDb::import_jsonl(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return Unexpected(bad_input("cannot read", file.string()));
  std::vector<ExperienceRecord> records;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      return Unexpected(bad_input(std::string("not a JSON record: ") + e.what(), file.string(), n));
    }
    auto r = experience_from_json(j);
    if (!r) return Unexpected(bad_input(r.error().message, file.string(), n, r.error().field));
    r->origin = "import";
    records.push_back(*r);
  }
  return add(records);
}

json to_json(const ExperienceRecord& r) {
  return {{"uid", r.uid},
          {"family", r.family},
          {"backend", r.backend},
          {"chip", r.chip},
          {"bottleneck", r.bottleneck},
          {"method", r.method},
          {"params", r.params},
          {"time_before_s", r.time_before_s},
          {"time_after_s", r.time_after_s},
          {"speedup", r.speedup},
          {"verdict", r.verdict.value_or(experience_verdict(r.speedup))},
          {"sass_verdict", r.sass_verdict},
          {"attribution_ms", r.attribution_ms},
          {"run_id", r.run_id},
          {"date", r.date},
          {"note", r.note},
          {"cause", std::string(name_of(r.cause))},
          {"origin", r.origin}};
}

Expected<ExperienceRecord> experience_from_json(const json& j) {
  if (!j.is_object()) return Unexpected(bad_input("a record is a JSON object"));
  for (const char* k : {"family", "chip", "method", "speedup"})
    if (!j.contains(k))
      return Unexpected(bad_input(std::string("missing field '") + k + "'", "", 0, k));
  try {
    ExperienceRecord r;
    r.uid = j.value("uid", "");
    r.family = j.at("family").get<std::string>();
    r.backend = j.value("backend", "cuda");
    r.chip = j.at("chip").get<std::string>();
    r.bottleneck = j.value("bottleneck", "");
    r.method = j.at("method").get<std::string>();
    r.params = j.value("params", ParamPoint{});
    r.time_before_s = j.value("time_before_s", 0.0);
    r.time_after_s = j.value("time_after_s", 0.0);
    r.speedup = j.at("speedup").get<double>();
    r.verdict = parse_enum<ExperienceVerdict>(j.value("verdict", std::string()))
                    .value_or(experience_verdict(r.speedup));
    r.sass_verdict = j.value("sass_verdict", "");
    r.attribution_ms = j.value("attribution_ms", 0.0);
    r.run_id = j.value("run_id", "");
    r.date = j.value("date", "");
    r.note = j.value("note", "");
    r.cause =
        parse_enum<PitfallCause>(j.value("cause", std::string())).value_or(PitfallCause::none);
    return r;
  } catch (const json::exception& e) {
    return Unexpected(bad_input(std::string("bad field: ") + e.what()));
  }
}

}  // namespace kopt
