#include "kopt/core/tools_dir.hpp"

#include <vector>

namespace kopt {
namespace fs = std::filesystem;

fs::path tools_dir(const std::string& name, const std::function<bool(const fs::path&)>& accept) {
  std::vector<fs::path> candidates;
#ifdef KOPT_TOOLS_DIR
  candidates.push_back(fs::path(KOPT_TOOLS_DIR) / name);  // the checkout this kopt was built from
#endif
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && candidates.size() < 5; dir = dir.parent_path()) {
      candidates.push_back(dir / ".tools" / name);
      if (dir == dir.root_path()) break;
    }
  for (const auto& c : candidates)
    if (fs::is_directory(c, ec) && accept(c)) return c;
  return {};
}

}  // namespace kopt
