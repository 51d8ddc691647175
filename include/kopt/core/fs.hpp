#pragma once
// File helpers: whole-file reads, atomic writes (write a temporary, then rename), cache dir.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

Expected<std::string> read_text_file(const std::filesystem::path& path);
Expected<std::vector<std::byte>> read_binary_file(const std::filesystem::path& path);
// The last `max_chars` of a log ("..." before them where it was cut), its trailing newlines and
// spaces dropped; "" where it cannot be read. What an error about a child quotes of its log.
std::string file_tail(const std::filesystem::path& path, std::size_t max_chars);

// Writes to "<path>.tmp.<pid>" and renames over path, so readers never see a partial file.
Expected<void> write_file_atomic(const std::filesystem::path& path,
                                 std::span<const std::byte> data);
// Copies `from` to `to` through a temporary beside `to` and a rename: never a half file.
// Streams the bytes, so a file of GBs needs no memory of its size.
Expected<void> copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to);
// Moves `from` to `to`: a rename where both are on one file system, else copy_file_atomic
// and the source removed.
Expected<void> move_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to);
Expected<void> write_text_atomic(const std::filesystem::path& path, std::string_view text);

// $KOPT_CACHE_DIR, else $XDG_CACHE_HOME/kopt, else $HOME/.cache/kopt, else a temp dir.
std::filesystem::path cache_dir();

// Where `data_bytes` of tensor files (inputs, outputs, reference outputs passed between kopt
// and its workers) are best written: a RAM file system (/dev/shm) when it has room for them
// with a margin and $TMPDIR names no place of its own, else the system temp dir. Files of
// GBs are written and read several times per problem; a disk makes that the slow part.
std::filesystem::path scratch_root(std::uintmax_t data_bytes);

// A fresh private directory under the system temp dir (or scratch_root(data_bytes) when the
// size of the data it will hold is given), removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kopt");
  TempDir(const std::string& prefix, std::uintmax_t data_bytes);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace kopt
