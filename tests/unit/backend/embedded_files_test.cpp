// Scripts compiled into kopt and written into the cache: a script and its modules as one folder
// per content, written whole, and written again where a file of it is gone.
#include <gtest/gtest.h>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

const EmbeddedFile k_files[] = {
    {"tool.py", "import tool_part\n"}, {"tool_part.py", "X = 1\n"}, {nullptr, nullptr}};

TEST(EmbeddedFiles, AScriptAndItsModulesAreOneFolderPerContentRestoredWhereAFileIsGone) {
  TempDir cache("kopt-embedded");
  fs::path entry = embedded_python_files(cache.path(), "tool", k_files);
  EXPECT_EQ(entry.filename(), "tool.py");
  EXPECT_EQ(read_text_file(entry).value_or(""), "import tool_part\n");
  EXPECT_EQ(read_text_file(entry.parent_path() / "tool_part.py").value_or(""), "X = 1\n");
  EXPECT_EQ(embedded_python_files(cache.path(), "tool", k_files), entry)
      << "one folder per content";

  fs::remove(entry.parent_path() / "tool_part.py");  // a cache cleaned by hand
  EXPECT_EQ(embedded_python_files(cache.path(), "tool", k_files), entry);
  EXPECT_EQ(read_text_file(entry.parent_path() / "tool_part.py").value_or(""), "X = 1\n");
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(entry.parent_path().parent_path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u) << "no part or damaged folder is left beside it";

  const EmbeddedFile other[] = {{"tool.py", "print(2)\n"}, {nullptr, nullptr}};
  EXPECT_NE(embedded_python_files(cache.path(), "tool", other), entry) << "new content, new folder";
}

}  // namespace
}  // namespace kopt
