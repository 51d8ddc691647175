#pragma once
// TOML text to a table, with a malformed file reported as bad input at its line.
#include <toml++/toml.h>

#include <string>

#include "kopt/core/error.hpp"

namespace kopt {

Expected<toml::table> parse_toml_text(const std::string& text, const std::string& file);

}  // namespace kopt
