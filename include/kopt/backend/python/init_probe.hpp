#pragma once
// `kopt init` and bare files given to any command: the problem of a kernel file, a ref.py and
// dims (problem/bare_files.hpp), with what only running them tells learned from kopt's Python
// (python/kopt_init_probe.py: setup()'s tensors, reference()'s signature and tolerances, the
// tensors reference() writes), written as kopt.toml.
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/problem/bare_files.hpp"

namespace kopt {

struct InitOutcome {
  std::filesystem::path spec;        // the kopt.toml
  std::string name;                  // the problem's
  std::vector<std::string> guesses;  // what kopt guessed, one line each
  bool written = false;              // false: a kopt.toml inferred from the same inputs was there
};

// Infers the problem and writes `req.out_dir`/kopt.toml, loaded once before it replaces
// anything; a kopt.toml inferred from the same inputs is kept as it is (unless `force`). A
// user's kopt.toml — one that does not start with k_inferred_header — is never replaced unless
// `force`. Bad input names the file, line and field and what settles it; a missing Python or
// torch is an environment error.
Expected<InitOutcome> init_bare_problem(const BareRequest& req,
                                        const std::filesystem::path& cache_root, bool force);

}  // namespace kopt
