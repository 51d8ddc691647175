#include "kopt/core/toml_text.hpp"

namespace kopt {

Expected<toml::table> parse_toml_text(const std::string& text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return Unexpected(bad_input("malformed TOML: " + std::string(e.description()), file,
                                static_cast<int>(e.source().begin.line)));
  }
}

}  // namespace kopt
