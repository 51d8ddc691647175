#pragma once
// A kernel's include_dirs (kopt.toml) turned into folders for its build.
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/problem/problem.hpp"

namespace kopt::evaluate {

struct ResolvedIncludes {
  std::vector<std::filesystem::path> dirs;
  std::string
      missing;  // why a folder cannot be found, naming the file, line and field; empty when none
};
ResolvedIncludes resolve_include_dirs(const Problem& p, const KernelSpec& k);

// Where the Python package `name` (an import name) is installed: `.tools/*/NAME` (what
// scripts/bootstrap installs beside kopt's checkout), else the package folder that
// $KOPT_PYTHON's or python3's importlib finds (find_spec: nothing is imported). Empty when
// none has it. Looked up once per process and name.
std::filesystem::path python_package_dir(const std::string& name);

}  // namespace kopt::evaluate
