#include "kopt/core/fs.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace kopt {
namespace fs = std::filesystem;

Expected<std::string> read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Unexpected(
        bad_input("cannot read file: " + std::string(std::strerror(errno)), path.string()));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string file_tail(const fs::path& path, std::size_t max_chars) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  std::size_t from = size > max_chars ? size - max_chars : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string tail(std::istreambuf_iterator<char>(in), {});
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return from > 0 ? "..." + tail : tail;
}

Expected<std::vector<std::byte>> read_binary_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return Unexpected(
        bad_input("cannot read file: " + std::string(std::strerror(errno)), path.string()));
  std::vector<std::byte> data(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!in) return Unexpected(internal_error("short read from " + path.string()));
  return data;
}

Expected<void> write_file_atomic(const fs::path& path, std::span<const std::byte> data) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  // Unique per process and per call: threads of one process may write the same path.
  static std::atomic<std::uint64_t> k_writes{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(k_writes++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Unexpected(
          environment_error("cannot write " + tmp.string() + ": " + std::strerror(errno)));
    out.write(reinterpret_cast<const char*>(data.data()),
              static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {  // a full disk, a file-size limit: the machine's, never the data's fault
      int why = errno;
      out.close();
      fs::remove(tmp, ec);
      return Unexpected(
          environment_error("write failed: " + tmp.string() + ": " + std::strerror(why)));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Unexpected(internal_error("cannot rename into " + path.string()));
  }
  return {};
}

namespace {
// A file operation the machine refused for want of room or of a working disk: the
// environment's failure, never the data's (nor a candidate's verdict).
bool machine_refused(const std::error_code& ec) {
  return ec == std::errc::no_space_on_device || ec == std::errc::file_too_large ||
         ec == std::errc::read_only_file_system || ec == std::errc::io_error ||
         ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system ||
         ec.value() == EDQUOT;
}
}  // namespace

Expected<void> copy_file_atomic(const fs::path& from, const fs::path& to) {
  static std::atomic<std::uint64_t> k_copies{0};
  std::error_code ec;
  if (to.has_parent_path()) fs::create_directories(to.parent_path(), ec);
  fs::path tmp = to;
  tmp += ".tmp." + std::to_string(::getpid()) + ".c" + std::to_string(k_copies++);
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    std::string what = "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message();
    return Unexpected(machine_refused(ec) ? environment_error(what) : internal_error(what));
  }
  return {};
}

Expected<void> move_file_atomic(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (to.has_parent_path()) fs::create_directories(to.parent_path(), ec);
  fs::rename(from, to, ec);
  if (!ec) return {};
  if (auto copied = copy_file_atomic(from, to); !copied) return copied;
  fs::remove(from, ec);
  return {};
}

Expected<void> write_text_atomic(const fs::path& path, std::string_view text) {
  return write_file_atomic(path, std::as_bytes(std::span(text.data(), text.size())));
}

fs::path cache_dir() {
  if (const char* v = std::getenv("KOPT_CACHE_DIR"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return fs::path(v) / "kopt";
  if (const char* v = std::getenv("HOME"); v && *v) return fs::path(v) / ".cache" / "kopt";
  return fs::temp_directory_path() / "kopt-cache";
}

fs::path scratch_root(std::uintmax_t data_bytes) {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir && *tmpdir) return fs::temp_directory_path();
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0 || ::access("/dev/shm", W_OK) != 0)
    return fs::temp_directory_path();
  std::uintmax_t available = static_cast<std::uintmax_t>(st.f_bavail) * st.f_frsize;
  std::uintmax_t margin = std::uintmax_t{2} << 30;  // left for everything else that uses the RAM
  return data_bytes + margin <= available / 2 ? fs::path("/dev/shm") : fs::temp_directory_path();
}

TempDir::TempDir(const std::string& prefix, std::uintmax_t data_bytes) {
  std::string templ = (scratch_root(data_bytes) / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  m_path = templ;
}

TempDir::TempDir(const std::string& prefix) {
  std::string templ = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  m_path = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

}  // namespace kopt
