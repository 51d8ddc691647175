#pragma once
// Internal to the loader: typed, position-aware access to a toml++ table.
// Errors are thrown as SpecError inside the loader and turned into a kopt::Error at its
// boundary (load_problem), which keeps the many small checks readable.
#include <toml++/toml.h>

#include <set>
#include <string>

#include "kopt/core/error.hpp"

namespace kopt::detail {

struct SpecError {
  Error error;
};

int line_of(const toml::node& n);
// "base[i]": the field of an array element in messages.
std::string indexed(const std::string& base, std::size_t i);

class TomlReader {
 public:
  TomlReader(const toml::table& table, std::string path, const std::string& file);
  ~TomlReader() = default;

  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  [[noreturn]] void fail_at(const toml::node& n, const std::string& field,
                            const std::string& why) const;

  bool has(const std::string& key) const;
  const toml::node* node(const std::string& key);  // marks the key used
  int line(const std::string& key) const;
  std::string field(const std::string& key) const;  // path + "." + key
  const std::string& path() const { return m_path; }
  const std::string& file() const { return m_file; }
  int table_line() const { return line_of(m_table); }

  std::string get_string(const std::string& key);
  std::string get_string(const std::string& key, const std::string& fallback);
  std::int64_t get_int(const std::string& key);
  double get_number(const std::string& key, double fallback);
  std::vector<std::string> get_string_list(const std::string& key);
  // A string expression or an integer, as text (for Expr::parse).
  std::string expr_text(const toml::node& n, const std::string& field) const;

  // Errors on any key that was not read: catches typos such as "shpae".
  void reject_unknown() const;
  // "missing required field", and the key of the table that looks like a typo of it.
  std::string missing(const std::string& key) const;

 private:
  const toml::table& m_table;
  std::string m_path;
  const std::string& m_file;
  std::set<std::string> m_used;
};

}  // namespace kopt::detail
