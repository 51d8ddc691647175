// The cache of reference outputs stays within its bound: the folders used longest ago go, the
// running check's own never do.
#include "kopt/evaluate/reference_cache.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/fs.hpp"

namespace kopt::evaluate {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ReferenceCache : public ::testing::Test {
 protected:
  // A reference folder of `kib` KiB, last used `ago` before now.
  fs::path folder(const std::string& key, int kib, std::chrono::seconds ago) {
    fs::path d = m_dir.path() / "references" / key;
    EXPECT_TRUE(write_file_atomic(d / "out.bin", std::vector<std::byte>(1024 * kib)));
    fs::last_write_time(d, fs::file_time_type::clock::now() - ago);
    return d;
  }
  fs::path root() const { return m_dir.path() / "references"; }
  TempDir m_dir{"kopt-ref-cache"};
};

TEST_F(ReferenceCache, TheFoldersUsedLongestAgoGoUntilTheRestFit) {
  fs::path a = folder("a", 2, 300s), b = folder("b", 2, 200s), c = folder("c", 2, 100s);
  auto gone = trim_references(root(), 4 * 1024, {c});
  EXPECT_EQ(gone, std::vector<fs::path>{a});
  EXPECT_TRUE(fs::exists(b) && fs::exists(c));
  // A folder used again is kept longest.
  touch_reference(b);
  fs::path d = folder("d", 2, 10s);
  gone = trim_references(root(), 4 * 1024, {d});
  EXPECT_EQ(gone, std::vector<fs::path>{c});
  EXPECT_TRUE(fs::exists(b) && fs::exists(d));
}

TEST_F(ReferenceCache, TheRunningChecksOwnFoldersStayWhateverTheBound) {
  fs::path a = folder("a", 2, 300s), b = folder("b", 2, 200s), c = folder("c", 2, 100s);
  auto gone = trim_references(root(), 0, {a, b});
  EXPECT_EQ(gone, std::vector<fs::path>{c});
  EXPECT_TRUE(fs::exists(a) && fs::exists(b));
  EXPECT_TRUE(trim_references(m_dir.path() / "none", 0, {}).empty()) << "no cache yet";
}

TEST_F(ReferenceCache, TheBoundIsTheUsersWhereSetElseAShareOfTheDisk) {
  std::optional<std::string> saved;
  if (const char* v = std::getenv("KOPT_REFERENCE_CACHE_GB")) saved = v;
  ::setenv("KOPT_REFERENCE_CACHE_GB", "0.5", 1);
  EXPECT_EQ(reference_cache_bound(root()), std::uintmax_t{1} << 29);
  ::unsetenv("KOPT_REFERENCE_CACHE_GB");
  std::uintmax_t bound = reference_cache_bound(root());
  EXPECT_GT(bound, 0u);
  EXPECT_LE(bound, std::uintmax_t{32} << 30);
  if (saved) ::setenv("KOPT_REFERENCE_CACHE_GB", saved->c_str(), 1);
}

}  // namespace
}  // namespace kopt::evaluate
