#pragma once
// Where scripts/bootstrap installs kopt's optional tools from PyPI: `.tools/<name>` of the
// checkout kopt was built from, or beside a kopt copied elsewhere with its checkout
// (build/kopt, .device/bin/kopt: a `.tools` in one of the executable's parent folders).
// kopt looks there by itself, so a bootstrapped checkout needs no variables.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kopt {

// The `.tools` folders to look in, the checkout's first (some may not exist).
std::vector<std::filesystem::path> tools_roots();

// The first `.tools/<name>` for which `accept` holds (e.g. "has a ray/ package"); empty when
// none does.
std::filesystem::path tools_dir(const std::string& name,
                                const std::function<bool(const std::filesystem::path&)>& accept);

}  // namespace kopt
