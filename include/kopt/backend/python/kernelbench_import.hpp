#pragma once
// `kopt import kernelbench FILE.py --out DIR`: runs the KernelBench file's Model once (on the
// GPU where there is one), in kopt's Python (python/kopt_kernelbench_import.py), and writes the
// problem directory: kopt.toml, ref.py and model.py (the file as it came).
#include <filesystem>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt {

// The import script in its --serve mode: one Python process that imports file after file, so
// that a batch pays for Python's start and torch's import once per process, not once per file.
// It starts on first use and again after it died or ran out of time. One thread at a time.
class KernelbenchImportProcess {
 public:
  explicit KernelbenchImportProcess(std::filesystem::path cache_root);
  ~KernelbenchImportProcess();
  KernelbenchImportProcess(const KernelbenchImportProcess&) = delete;
  KernelbenchImportProcess& operator=(const KernelbenchImportProcess&) = delete;

  // The script's facts about `file` (JSON); an Error when Python or torch is missing
  // (environment, with what to install), when the file cannot be imported (bad input: why), or
  // when the script failed (internal). The GPU out of memory is an internal Error that
  // import_ran_out_of_memory() recognizes: a batch tries the file again alone.
  Expected<nlohmann::json> facts(const std::filesystem::path& file);

 private:
  std::filesystem::path m_cache_root;
  TempDir m_dir;  // the process's log
  Subprocess m_child;
};

// The import's Error that says the GPU had no room for `file` (torch's words in `why`), and
// whether an Error is one.
Error import_out_of_memory_error(const std::filesystem::path& file, const std::string& why);
bool import_ran_out_of_memory(const Error& e);

// Writes the problem into `out_dir` (created). A directory that already holds a kopt.toml
// is left alone unless `force`: nothing already there is lost by accident. With `process`, the
// facts come from it (a batch's); else from a process of its own.
Expected<ImportedProblem> import_kernelbench(const std::filesystem::path& file,
                                             const std::filesystem::path& out_dir,
                                             const std::filesystem::path& cache_root, bool force,
                                             KernelbenchImportProcess* process = nullptr);

}  // namespace kopt
