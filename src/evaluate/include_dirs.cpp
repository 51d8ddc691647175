#include "kopt/evaluate/include_dirs.hpp"

#include <map>
#include <mutex>

#include "kopt/core/process.hpp"
#include "kopt/core/python.hpp"
#include "kopt/core/tools_dir.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;

namespace {

fs::path find_package(const std::string& name) {
  std::error_code ec;
  for (const auto& root : tools_roots())
    if (fs::is_directory(root, ec))
      for (const auto& e : fs::directory_iterator(root, ec))
        if (fs::is_directory(e.path() / name, ec)) return e.path() / name;
  SystemCommandRunner runner;
  CommandResult r = runner.run({choose_python(name), "-c",
                                "import importlib.util, sys\n"
                                "s = importlib.util.find_spec(sys.argv[1])\n"
                                "print(list(s.submodule_search_locations)[0] if s and "
                                "s.submodule_search_locations else '')",
                                name},
                               std::chrono::seconds(20));
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (r.ok() && !out.empty() && fs::is_directory(out, ec)) return out;
  return {};
}

}  // namespace

fs::path python_package_dir(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, fs::path> found;
  std::lock_guard lock(mutex);
  auto it = found.find(name);
  if (it == found.end()) it = found.emplace(name, find_package(name)).first;
  return it->second;
}

ResolvedIncludes resolve_include_dirs(const Problem& p, const KernelSpec& k) {
  ResolvedIncludes out;
  std::error_code ec;
  auto at = [&](const IncludeDir& d) {
    return p.spec_path.string() + ":" + std::to_string(d.where.line) + ": " + d.where.field + ": ";
  };
  for (const auto& d : k.include_dirs) {
    fs::path dir;
    if (!d.python_package.empty()) {
      fs::path pkg = python_package_dir(d.python_package);
      if (pkg.empty()) {
        out.missing = at(d) + "the Python package '" + d.python_package +
                      "' is not installed (looked in .tools/* beside kopt's checkout and in "
                      "python3's path): " +
                      (d.pip.empty() ? "install it" : "pip install " + d.pip) +
                      (d.pip == "nvidia-cutlass" ? ", or run scripts/bootstrap --cutlass" : "");
        return out;
      }
      dir = d.path.empty() ? pkg : pkg / d.path;
    } else {
      dir = fs::path(d.path).is_absolute() ? fs::path(d.path) : p.dir / d.path;
    }
    if (!fs::is_directory(dir, ec)) {
      out.missing = at(d) + "no folder " + dir.string();
      return out;
    }
    out.dirs.push_back(dir);
  }
  return out;
}

}  // namespace kopt::evaluate
