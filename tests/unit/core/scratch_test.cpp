// Where tensor files go: a RAM file system when it has room and TMPDIR names no other place.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

class Scratch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("TMPDIR")) m_saved = v;
    ::unsetenv("TMPDIR");
  }
  void TearDown() override {
    if (m_saved)
      ::setenv("TMPDIR", m_saved->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  std::optional<std::string> m_saved;
};

TEST_F(Scratch, DataLargerThanTheRamFileSystemGoesToTheTempDir) {
  std::uintmax_t too_much = std::uintmax_t{1} << 60;
  EXPECT_EQ(scratch_root(too_much), fs::temp_directory_path());
}

TEST_F(Scratch, ATmpdirOfTheUsersIsAlwaysRespected) {
  TempDir mine("kopt-scratch-test");
  ::setenv("TMPDIR", mine.path().c_str(), 1);
  EXPECT_EQ(scratch_root(0), mine.path());
  TempDir d("kopt-x", 1024);
  EXPECT_EQ(d.path().parent_path(), mine.path());
}

TEST_F(Scratch, SmallDataGoesToDevShmWhereItIsWritable) {
  if (!fs::is_directory("/dev/shm") || ::access("/dev/shm", W_OK) != 0)
    GTEST_SKIP() << "no writable /dev/shm here";
  EXPECT_EQ(scratch_root(1024), fs::path("/dev/shm"));
  fs::path where;
  {
    TempDir d("kopt-scratch-test", 1024);
    where = d.path();
    EXPECT_EQ(where.parent_path(), fs::path("/dev/shm"));
    EXPECT_TRUE(fs::is_directory(where));
  }
  EXPECT_FALSE(fs::exists(where));  // removed like any TempDir
}

}  // namespace
}  // namespace kopt
