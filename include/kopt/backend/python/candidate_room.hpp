#pragma once
// Where a candidate's Python process lives (docs/honesty.md, "a sandbox for candidates"): a
// directory of its own, ro/ for what it is given (the worker script, its module, its inputs,
// linked read-only) and rw/ for what it may write (its outputs, temporary files, Triton's and
// CUDA's caches), and a sandbox (core/sandbox.hpp) that lets it read the system and its Python
// but not kopt's cache, run state, experience DB nor the reference's outputs, write nothing
// outside rw/, and open no network socket.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/core/sandbox.hpp"

namespace kopt {

class CandidateRoom {
 public:
  // `python`: the interpreter the candidate runs in (its own directories are readable);
  // `worker_script`: the text of the script it runs, copied in.
  CandidateRoom(const std::string& python, const char* worker_script);

  // The command line and options that start the candidate's process in the room.
  std::vector<std::string> argv() const;
  const SpawnOptions& spawn_options() const { return m_options; }
  // What the sandbox enforces here (said in reports).
  std::string describe() const { return m_sandbox.describe(); }
  const std::filesystem::path& path() const { return m_dir.path(); }

  // A request's job, moved into the room: its module copied (once per version), its inputs
  // linked read-only, its outputs written under rw/. `hand_back` after the reply copies the
  // outputs to where the caller expects them and clears the inputs away.
  struct Handover {
    std::vector<std::pair<std::filesystem::path, std::filesystem::path>> outputs;  // room, caller
    std::vector<std::filesystem::path> inputs;  // links to remove
  };
  Expected<Handover> admit(nlohmann::json& request);
  Expected<void> hand_back(const Handover& h);

 private:
  Expected<std::filesystem::path> admit_module(const std::filesystem::path& module);
  Expected<std::filesystem::path> admit_input(const std::filesystem::path& input,
                                              const std::string& name);

  TempDir m_dir;
  std::filesystem::path m_ro, m_rw;
  PythonLayout m_python;
  PreparedSandbox m_sandbox;
  SpawnOptions m_options;
  int m_next = 0;
};

}  // namespace kopt
