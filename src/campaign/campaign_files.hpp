#pragma once
// What the campaign's files share (campaign.hpp): the state file, written atomically after every
// step; the directory's lock, held by the one campaign that runs in it; the sources a second
// invocation adds while it runs; and the fingerprint of a problem's files.
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kopt/campaign/campaign.hpp"

namespace kopt::campaign {

// The campaign's state file, shared by its lanes: saved whole after every step.
class StateFile {
 public:
  explicit StateFile(std::filesystem::path out) : m_out(std::move(out)) {}
  void save(const CampaignState& s);
  std::mutex& mutex() { return m_mutex; }

 private:
  std::filesystem::path m_out;
  std::mutex m_mutex;
};

// flock() on DIR/campaign.lock: held while this process lives (a killed campaign frees it).
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& out);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  bool held() const { return m_held; }

 private:
  int m_fd = -1;
  bool m_held = false;
};

// DIR/sources.json: sources added while another invocation runs the campaign.
std::vector<std::string> added_sources(const std::filesystem::path& out);
Expected<void> add_sources(const std::filesystem::path& out, const std::vector<std::string>& more);

// A hash of the files that decide a problem: a problem directory's files (not hidden ones, not
// kopt's own outputs), or one KernelBench file.
std::string fingerprint_of(const std::filesystem::path& source);
// A problem's: its source's, and with a ModelNew candidate that file's too.
std::string fingerprint_of(const CampaignProblem& p);

std::filesystem::path problem_room(const std::filesystem::path& out, const std::string& name);

}  // namespace kopt::campaign
