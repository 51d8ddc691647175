#pragma once
// git for run directories: each accepted version is a commit, so a run's history can be
// inspected, diffed and checked out with the tools people already use.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"

namespace kopt {

class GitRepo {
 public:
  GitRepo(CommandRunner& runner, std::filesystem::path dir);
  // `git init` with a local identity (kopt) unless the directory is a repository already.
  Expected<void> init();
  // Stages everything under the directory and commits; returns the new commit's hash.
  // With nothing to commit it returns the current HEAD.
  Expected<std::string> commit_all(const std::string& message);
  Expected<std::string> head();

 private:
  Expected<CommandResult> git(std::vector<std::string> args);
  CommandRunner& m_runner;
  std::filesystem::path m_dir;
};

}  // namespace kopt
