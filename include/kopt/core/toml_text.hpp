#pragma once
// TOML text to a table, with a malformed file reported as bad input at its line; and the TOML
// kopt writes (kopt.toml from bare files, the playbooks' observed section), whose strings are
// JSON strings: a valid TOML basic string, escapes and all.
#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

Expected<toml::table> parse_toml_text(const std::string& text, const std::string& file);

inline std::string toml_string(const std::string& s) {
  return nlohmann::json(s).dump();
}

inline std::string toml_string_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_string(v[i]);
  return out + "]";
}

}  // namespace kopt
