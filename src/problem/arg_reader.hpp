#pragma once
// Internal to the loader: one entry of a kernel's `args` list. Throws SpecError (toml_reader.hpp).
#include <toml++/toml.h>

#include <set>
#include <string>

#include "kopt/problem/problem.hpp"
#include "toml_reader.hpp"

namespace kopt::detail {

// Parses an expression of kopt.toml whose names must all be in `allowed` (`allowed_what`
// says what they are, for the message).
Expr parse_spec_expr(const std::string& text, const std::string& file, int line,
                     const std::string& field, const std::set<std::string>& allowed,
                     const std::string& allowed_what);

// A tensor name, an expression (an i32 scalar), or a table { tensor = "x" },
// { expr = "n", dtype = "i64" } or { tensor_map = "A", box = [...], swizzle = 128 };
// `names` are the dims and params expressions may use.
ArgSpec read_arg(const toml::node& n, const std::string& field, const Problem& p,
                 const std::set<std::string>& names, const std::string& file);

// `include_dirs = ["inc", { python_package = "cutlass_library", path = "source/include",
// pip = "nvidia-cutlass" }]`: read, not resolved (the folders are looked up when a build
// needs them, so a missing package fails that kernel's builds, not the problem's loading).
std::vector<IncludeDir> read_include_dirs(TomlReader& kr);

}  // namespace kopt::detail
