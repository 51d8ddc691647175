#include "kopt/core/error.hpp"

namespace kopt {

std::string Error::to_string() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) out += ":" + std::to_string(line);
    out += ": ";
  }
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::bad_input:
      return 2;
    case ErrorKind::environment:
      return 3;
    case ErrorKind::internal:
      return 4;
  }
  return 4;
}

Error bad_input(std::string message, std::string file, int line, std::string field) {
  return Error{ErrorKind::bad_input, std::move(message), std::move(file), line, std::move(field)};
}
Error environment_error(std::string message) {
  return Error{ErrorKind::environment, std::move(message), {}, 0, {}};
}
Error internal_error(std::string message) {
  return Error{ErrorKind::internal, std::move(message), {}, 0, {}};
}

}  // namespace kopt
