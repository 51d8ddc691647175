#pragma once
// The SQLite handle of the experience DB and a prepared statement, for its source files only.
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/store/experience_db.hpp"

namespace kopt {

struct ExperienceDb::Handle {
  sqlite3* db = nullptr;
  ~Handle() {
    if (db) sqlite3_close(db);
  }
};

namespace sqlite {

inline Error db_error(sqlite3* db, const std::string& what, const std::filesystem::path& path) {
  return bad_input(what + ": " + (db ? sqlite3_errmsg(db) : "cannot open"), path.string());
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : m_db(db) {
    m_ok = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) == SQLITE_OK;
  }
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return m_ok; }
  void bind(int i, const std::string& s) {
    sqlite3_bind_text(m_stmt, i, s.c_str(), -1, SQLITE_TRANSIENT);
  }
  void bind(int i, double v) { sqlite3_bind_double(m_stmt, i, v); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(m_stmt, i, v); }
  int step() { return sqlite3_step(m_stmt); }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  std::string text(int col) const {
    auto p = sqlite3_column_text(m_stmt, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int col) const { return sqlite3_column_double(m_stmt, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(m_stmt, col); }
  bool null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }

 private:
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
  bool m_ok = false;
};

inline bool exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

// Inserts every record in one transaction with `sql`, `bind(statement, record)` binding its
// values; returns how many rows were new (INSERT OR IGNORE skips duplicates). A failure rolls
// the whole write back.
template <class Record, class Bind>
Expected<std::size_t> insert_all(sqlite3* db, const char* sql, std::vector<Record>& records,
                                 Bind bind, const std::filesystem::path& path,
                                 const std::string& what) {
  if (!exec(db, "BEGIN IMMEDIATE;")) return Unexpected(db_error(db, "cannot start a write", path));
  std::size_t added = 0;
  {
    Statement ins(db, sql);
    for (auto& r : records) {
      bind(ins, r);
      if (ins.step() != SQLITE_DONE) {
        Error e = db_error(db, "cannot add " + what, path);
        exec(db, "ROLLBACK;");
        return Unexpected(e);
      }
      added += static_cast<std::size_t>(sqlite3_changes(db));
      ins.reset();
    }
  }
  if (!exec(db, "COMMIT;")) {
    Error e = db_error(db, "cannot commit", path);
    exec(db, "ROLLBACK;");
    return Unexpected(e);
  }
  return added;
}

}  // namespace sqlite
}  // namespace kopt
