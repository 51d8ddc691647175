#pragma once
// Reads and validates a problem directory's kopt.toml.
#include <filesystem>
#include <map>
#include <string>

#include "kopt/core/error.hpp"
#include "kopt/problem/problem.hpp"

namespace kopt {

// `path` is a problem directory or its kopt.toml. `dim_overrides` replace [dims] values
// (from --dim). Every error names the file, line and field.
Expected<Problem> load_problem(const std::filesystem::path& path,
                               const std::map<std::string, std::int64_t>& dim_overrides = {});

// The same, from TOML text (for tests); `dir` is where relative source paths resolve.
Expected<Problem> parse_problem(const std::string& toml_text,
                                const std::filesystem::path& spec_path,
                                const std::map<std::string, std::int64_t>& dim_overrides = {});

}  // namespace kopt
