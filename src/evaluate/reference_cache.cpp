#include "kopt/evaluate/reference_cache.hpp"

#include <algorithm>
#include <string>

#include "kopt/core/units.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;

std::uintmax_t reference_cache_bound(const fs::path& references) {
  if (auto set = env_gib("KOPT_REFERENCE_CACHE_GB")) return *set;
  std::error_code ec;
  fs::path probe = references;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  std::uintmax_t quarter = 0;
  if (auto space = fs::space(probe.empty() ? fs::current_path(ec) : probe, ec); !ec)
    quarter = space.capacity / 4;
  return std::min<std::uintmax_t>(quarter > 0 ? quarter : 8ull << 30, 32ull << 30);
}

void touch_reference(const fs::path& folder) {
  std::error_code ec;
  fs::last_write_time(folder, fs::file_time_type::clock::now(), ec);
}

std::vector<fs::path> trim_references(const fs::path& references, std::uintmax_t bound,
                                      const std::vector<fs::path>& keep) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uintmax_t bytes = 0;
  };
  std::vector<Entry> entries;
  std::uintmax_t total = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(references, ec)) {
    if (!d.is_directory(ec)) continue;
    Entry e{d.path(), fs::last_write_time(d.path(), ec), 0};
    for (const auto& f : fs::recursive_directory_iterator(d.path(), ec))
      if (f.is_regular_file(ec)) e.bytes += f.file_size(ec);
    total += e.bytes;
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  std::vector<fs::path> removed;
  for (const auto& e : entries) {
    if (total <= bound) break;
    if (std::any_of(keep.begin(), keep.end(),
                    [&](const fs::path& k) { return fs::equivalent(e.path, k, ec); }))
      continue;
    fs::remove_all(e.path, ec);
    if (ec) continue;
    total -= e.bytes;
    removed.push_back(e.path);
  }
  return removed;
}

}  // namespace kopt::evaluate
