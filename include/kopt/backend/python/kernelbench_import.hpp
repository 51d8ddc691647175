#pragma once
// `kopt import kernelbench FILE.py --out DIR`: runs the KernelBench file's Model once on
// the CPU, in kopt's Python (python/kopt_kernelbench_import.py), and writes the problem
// directory: kopt.toml, ref.py and model.py (the file as it came).
#include <filesystem>

#include "kopt/problem/kernelbench.hpp"

namespace kopt {

// The import script's facts about `file` (JSON); an Error when Python or torch is missing
// (environment, with what to install) or the script fails.
Expected<nlohmann::json> kernelbench_facts(const std::filesystem::path& file,
                                           const std::filesystem::path& cache_root);

// Writes the problem into `out_dir` (created). A directory that already holds a kopt.toml
// is left alone unless `force`: nothing already there is lost by accident.
Expected<ImportedProblem> import_kernelbench(const std::filesystem::path& file,
                                             const std::filesystem::path& out_dir,
                                             const std::filesystem::path& cache_root, bool force);

}  // namespace kopt
