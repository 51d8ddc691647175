#pragma once
// `kopt import kernelbench FILE.py --out DIR`: runs the KernelBench file's Model once (on the
// GPU where there is one), in kopt's Python (python/kopt_kernelbench_import.py), and writes the
// problem directory: kopt.toml, ref.py and model.py (the file as it came).
#include <filesystem>
#include <memory>

#include "kopt/core/fork_server.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt {

// The import script in its --serve mode: one Python process that imports file after file, so
// that a batch pays for Python's start and torch's import once per process, not once per file.
// It starts on first use and again after it died or ran out of time. One thread at a time.
// With `server` (kernelbench_import_server: a batch's, shared by its import threads), it is a
// child forked from a Python that has imported torch already: N threads wait for one import of
// torch, not N at once, and a process that died comes back without importing it again.
class KernelbenchImportProcess {
 public:
  explicit KernelbenchImportProcess(std::filesystem::path cache_root, ForkServer* server = nullptr);
  ~KernelbenchImportProcess();
  KernelbenchImportProcess(const KernelbenchImportProcess&) = delete;
  KernelbenchImportProcess& operator=(const KernelbenchImportProcess&) = delete;

  // The script's facts about `file` (JSON); an Error when Python or torch is missing
  // (environment, with what to install), when the file cannot be imported (bad input: why), or
  // when the script failed (internal). The GPU out of memory is an internal Error that
  // import_ran_out_of_memory() recognizes: a batch tries the file again alone.
  Expected<nlohmann::json> facts(const std::filesystem::path& file);
  // The process's pid while it runs (else -1): for a log, or a test that kills it.
  pid_t pid() const { return m_server ? m_forked.pid() : m_child.pid(); }

 private:
  Expected<void> start(const std::filesystem::path& log);
  bool running() const { return m_server ? m_forked.running() : m_child.running(); }
  std::string kill();
  std::filesystem::path m_cache_root;
  ForkServer* m_server;
  TempDir m_dir;         // the process's log
  Subprocess m_child;    // without a server
  ForkedChild m_forked;  // with one
};

// The fork server of a batch's import processes (the import script's --fork-server mode).
std::unique_ptr<ForkServer> kernelbench_import_server(const std::filesystem::path& cache_root);

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
