#pragma once
// Expected failures travel as values (docs/architecture.md §5): kopt::Error inside kopt::Expected.
#include <string>
#include <tl/expected.hpp>

namespace kopt {

// What kind of failure this is; decides the process exit code (docs/architecture.md §4).
enum class ErrorKind {
  bad_input,    // exit 2: malformed spec, unknown name, missing file, usage
  environment,  // exit 3: no GPU, no driver, no NVRTC, no tool
  internal,     // exit 4: a bug or an unexpected system failure
};

struct Error {
  ErrorKind kind = ErrorKind::internal;
  std::string message;
  std::string file;   // where the bad input is, if known
  int line = 0;       // 1-based, 0 when unknown
  std::string field;  // e.g. "tensors[1].shape[0]"

  // "file:line: field: message" with the parts that are known.
  std::string to_string() const;
};

int exit_code(ErrorKind kind);

Error bad_input(std::string message, std::string file = {}, int line = 0, std::string field = {});
Error environment_error(std::string message);
Error internal_error(std::string message);

template <class T>
using Expected = tl::expected<T, Error>;
using Unexpected = tl::unexpected<Error>;

}  // namespace kopt
