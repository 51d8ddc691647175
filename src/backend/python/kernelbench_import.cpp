#include "kopt/backend/python/kernelbench_import.hpp"

#include <optional>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
extern const char* const k_kernelbench_import_script;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr std::string_view k_out_of_memory = "the GPU ran out of memory importing ";
constexpr auto k_import_limit = std::chrono::minutes(15);
// Python's start and torch's import, on a loaded machine.
constexpr std::chrono::milliseconds k_start_limit = std::chrono::minutes(5);

std::string tail_of(const fs::path& log) {
  std::string tail = file_tail(log, 2000);
  return tail.empty() ? "(it wrote nothing to its log)" : tail;
}

std::vector<std::string> import_script(const fs::path& cache_root, std::string_view mode) {
  fs::path script =
      embedded_python_script(cache_root, "kopt_kernelbench_import", k_kernelbench_import_script);
  return {python_executable(), script.string(), std::string(mode)};
}

Error no_python() {
  return environment_error("cannot run " + python_executable() +
                           ": install Python 3 with torch and numpy (pip install torch numpy, or "
                           "apt-get install python3-torch python3-numpy) or set KOPT_PYTHON");
}
}  // namespace

std::unique_ptr<ForkServer> kernelbench_import_server(const fs::path& cache_root) {
  return std::make_unique<ForkServer>(import_script(cache_root, "--fork-server"),
                                      "the KernelBench import's fork server");
}

KernelbenchImportProcess::KernelbenchImportProcess(fs::path cache_root, ForkServer* server)
    : m_cache_root(std::move(cache_root)), m_server(server), m_dir("kopt-kernelbench-import") {}

KernelbenchImportProcess::~KernelbenchImportProcess() {
  kill();
}

std::string KernelbenchImportProcess::kill() {
  if (m_server) return m_forked.kill();
  return m_child.running() ? m_child.kill_and_reap() : "not running";
}

Expected<void> KernelbenchImportProcess::start(const fs::path& log) {
  if (m_server) {
    // The server's own start (torch's import) is waited for here the first time.
    auto child = m_server->fork(log, k_start_limit);
    if (!child)  // its own words (a TMPDIR too long, say) unless the Python is not there
      return Unexpected(child.error().kind == ErrorKind::environment &&
                                !find_program(python_executable())
                            ? no_python()
                            : child.error());
    m_forked = std::move(*child);
    return {};
  }
  auto started = Subprocess::spawn(import_script(m_cache_root, "--serve"), log);
  if (!started) return Unexpected(no_python());
  m_child = std::move(*started);
  return {};
}

Error import_out_of_memory_error(const fs::path& file, const std::string& why) {
  return internal_error(std::string(k_out_of_memory) + file.string() + ": " + why);
}

bool import_ran_out_of_memory(const Error& e) {
  return e.kind == ErrorKind::internal && e.message.rfind(k_out_of_memory, 0) == 0;
}

Expected<json> KernelbenchImportProcess::facts(const fs::path& file) {
  if (!fs::is_regular_file(file)) return Unexpected(bad_input("no such file", file.string()));
  fs::path log = m_dir.path() / "import.log";
  if (!running())
    if (auto started = start(log); !started) return Unexpected(started.error());
  std::string line;
  auto read = LineChannel::ReadStatus::eof;
  std::string request = json{{"file", fs::absolute(file).string()}}.dump();
  if (m_server ? m_forked.write_line(request) : m_child.write_line(request))
    read = m_server ? m_forked.read_line(line, k_import_limit)
                    : m_child.read_line(line, k_import_limit);
  if (read != LineChannel::ReadStatus::line) {
    std::string how = kill();  // a forked child's end is its server's to reap: no status here
    std::string why = read == LineChannel::ReadStatus::timeout ? "ran out of time (15 min)"
                      : m_server                               ? "ended without an answer"
                                                               : "failed (" + how + ")";
    return Unexpected(internal_error("the KernelBench import script " + why + " on " +
                                     file.string() + ": " + tail_of(log)));
  }
  try {
    json facts = json::parse(line);
    if (!facts.contains("error")) return facts;
    std::string e = facts.at("error");
    if (e.find("cannot import torch") != std::string::npos) return Unexpected(environment_error(e));
    if (facts.value("out_of_memory", false)) return Unexpected(import_out_of_memory_error(file, e));
    if (facts.contains("crashed"))
      return Unexpected(internal_error("the KernelBench import script failed on " + file.string() +
                                       ": " + facts.at("crashed").get<std::string>()));
    return Unexpected(bad_input(e, file.string()));
  } catch (const json::exception& e) {
    return Unexpected(
        internal_error("the KernelBench import script printed no JSON: " + line.substr(0, 400)));
  }
}

Expected<ImportedProblem> import_kernelbench(const fs::path& file, const fs::path& out_dir,
                                             const fs::path& cache_root, bool force,
                                             KernelbenchImportProcess* process) {
  if (fs::exists(out_dir / "kopt.toml") && !force)
    return Unexpected(bad_input(
        "already holds a kopt.toml; --force replaces the imported files (kopt.toml, ref.py, "
        "model.py, modelnew_adapter.py) and leaves the rest",
        out_dir.string()));
  auto source = read_text_file(file);
  if (!source) return Unexpected(bad_input(source.error().message, file.string()));
  std::optional<KernelbenchImportProcess> own;
  if (!process) process = &own.emplace(cache_root);
  auto facts = process->facts(file);
  if (!facts) return Unexpected(facts.error());
  auto problem = problem_from_kernelbench(*facts, file.filename().string());
  if (!problem) return Unexpected(problem.error());
  problem->process_start_s = facts->value("process_start_s", 0.0);
  for (const auto& [name, text] :
       {std::pair{"model.py", &*source}, std::pair{"ref.py", &problem->ref_py},
        std::pair{k_model_new_adapter_file, &problem->model_new_adapter},
        std::pair{"kopt.toml", &problem->kopt_toml}})
    if (auto w = write_text_atomic(out_dir / name, *text); !w) return Unexpected(w.error());
  // What was written must load: an import that kopt itself cannot read is kopt's bug.
  if (auto loaded = load_problem(out_dir); !loaded)
    return Unexpected(
        internal_error("the imported problem does not load: " + loaded.error().to_string()));
  return problem;
}

}  // namespace kopt
