#include "kopt/core/tools_dir.hpp"

#include <vector>

namespace kopt {
namespace fs = std::filesystem;

std::vector<fs::path> tools_roots() {
  std::vector<fs::path> roots;
#ifdef KOPT_TOOLS_DIR
  roots.emplace_back(KOPT_TOOLS_DIR);  // the checkout this kopt was built from
#endif
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && roots.size() < 5;
         dir = dir.parent_path()) {
      roots.push_back(dir / ".tools");
      if (dir == dir.root_path()) break;
    }
  return roots;
}

fs::path tools_dir(const std::string& name, const std::function<bool(const fs::path&)>& accept) {
  std::error_code ec;
  for (const auto& root : tools_roots())
    if (fs::path c = root / name; fs::is_directory(c, ec) && accept(c)) return c;
  return {};
}

}  // namespace kopt
