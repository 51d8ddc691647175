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

#include "kopt/core/embedded_file.hpp"
#include "kopt/core/error.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/core/sandbox.hpp"

namespace kopt {

// What a candidate may keep in its room beside its outputs: KOPT_CANDIDATE_ROOM_GB where set,
// else 4 GiB (Triton's, inductor's and CUDA's caches of one candidate stay well under it).
std::uintmax_t room_allowance_bytes();

class CandidateRoom {
 public:
  // `python`: the interpreter the candidate runs in (its own directories are readable);
  // `worker_files`: the worker's script and its parts, copied in (kopt_python_worker.py runs).
  CandidateRoom(const std::string& python, const EmbeddedFile* worker_files);

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
    std::uintmax_t output_bytes = 0;            // what the outputs should take, whole
  };
  Expected<Handover> admit(nlohmann::json& request);
  Expected<void> hand_back(const Handover& h);

  // A room that holds more than its allowance after a request (the request's outputs plus
  // room_allowance_bytes() for caches and temporary files) was filled by the candidate: the
  // reason, said as its verdict; empty while within it. A candidate that fills the disk
  // otherwise reads as the machine failing (every write of kopt's refused), and a resume would
  // meet it again and again.
  std::string overfull(const Handover& h) const;

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
