#include "toml_reader.hpp"

#include "kopt/core/suggest.hpp"

namespace kopt::detail {

int line_of(const toml::node& n) {
  return static_cast<int>(n.source().begin.line);
}

std::string indexed(const std::string& base, std::size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

TomlReader::TomlReader(const toml::table& table, std::string path, const std::string& file)
    : m_table(table), m_path(std::move(path)), m_file(file) {}

std::string TomlReader::field(const std::string& key) const {
  return m_path.empty() ? key : m_path + "." + key;
}

int TomlReader::line(const std::string& key) const {
  if (const toml::node* n = m_table.get(key)) return line_of(*n);
  return line_of(m_table);
}

void TomlReader::fail(const std::string& key, const std::string& why) const {
  throw SpecError{bad_input(why, m_file, line(key), field(key))};
}

void TomlReader::fail_at(const toml::node& n, const std::string& fld,
                         const std::string& why) const {
  throw SpecError{bad_input(why, m_file, line_of(n), fld)};
}

bool TomlReader::has(const std::string& key) const {
  return m_table.contains(key);
}

const toml::node* TomlReader::node(const std::string& key) {
  m_used.insert(key);
  return m_table.get(key);
}

std::string TomlReader::get_string(const std::string& key) {
  const toml::node* n = node(key);
  if (!n) throw SpecError{bad_input(missing(key), m_file, line_of(m_table), field(key))};
  if (!n->is_string()) fail(key, "expected a string");
  return n->as_string()->get();
}

std::string TomlReader::get_string(const std::string& key, const std::string& fallback) {
  return has(key) ? get_string(key) : (m_used.insert(key), fallback);
}

std::int64_t TomlReader::get_int(const std::string& key) {
  const toml::node* n = node(key);
  if (!n) throw SpecError{bad_input(missing(key), m_file, line_of(m_table), field(key))};
  if (!n->is_integer()) fail(key, "expected an integer");
  return n->as_integer()->get();
}

double TomlReader::get_number(const std::string& key, double fallback) {
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
  if (n->is_floating_point()) return n->as_floating_point()->get();
  fail(key, "expected a number");
}

std::vector<std::string> TomlReader::get_string_list(const std::string& key) {
  std::vector<std::string> out;
  const toml::node* n = node(key);
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) fail(key, "expected an array of strings");
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::node& item = *arr->get(i);
    if (!item.is_string())
      fail_at(item, field(key) + "[" + std::to_string(i) + "]", "expected a string");
    out.push_back(item.as_string()->get());
  }
  return out;
}

std::string TomlReader::expr_text(const toml::node& n, const std::string& fld) const {
  if (n.is_string()) return n.as_string()->get();
  if (n.is_integer()) return std::to_string(n.as_integer()->get());
  if (n.is_floating_point()) return std::to_string(n.as_floating_point()->get());
  fail_at(n, fld, "expected an expression (a string) or a number");
}

void TomlReader::reject_unknown() const {
  std::vector<std::string> known(m_used.begin(), m_used.end());
  for (const auto& [k, v] : m_table) {
    std::string key(k.str());
    if (!m_used.count(key)) fail_at(v, field(key), "unknown field" + did_you_mean(key, known));
  }
}

std::string TomlReader::missing(const std::string& key) const {
  std::vector<std::string> present;
  for (const auto& [k, v] : m_table)
    if (!m_used.count(std::string(k.str()))) present.push_back(std::string(k.str()));
  for (const auto& p : present)
    if (closest_name(p, {key}))
      return "missing required field (the table has '" + p + "': did you mean '" + key + "'?)";
  return "missing required field";
}

}  // namespace kopt::detail
