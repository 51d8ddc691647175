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

std::string tail_of(const fs::path& log) {
  auto text = read_text_file(log);
  if (!text || text->empty()) return "(it wrote nothing to its log)";
  return text->substr(text->size() > 2000 ? text->size() - 2000 : 0);
}
}  // namespace

KernelbenchImportProcess::KernelbenchImportProcess(fs::path cache_root)
    : m_cache_root(std::move(cache_root)), m_dir("kopt-kernelbench-import") {}

KernelbenchImportProcess::~KernelbenchImportProcess() {
  if (m_child.running()) m_child.kill_and_reap();
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
  if (!m_child.running()) {
    fs::path script = embedded_python_script(m_cache_root, "kopt_kernelbench_import",
                                             k_kernelbench_import_script);
    auto started = Subprocess::spawn({python_executable(), script.string(), "--serve"}, log);
    if (!started)
      return Unexpected(
          environment_error("cannot run " + python_executable() +
                            ": install Python 3 with torch and numpy (pip install torch numpy, or "
                            "apt-get install python3-torch python3-numpy) or set KOPT_PYTHON"));
    m_child = std::move(*started);
  }
  std::string line;
  Subprocess::ReadStatus read = Subprocess::ReadStatus::eof;
  if (m_child.write_line(json{{"file", fs::absolute(file).string()}}.dump()))
    read = m_child.read_line(line, k_import_limit);
  if (read != Subprocess::ReadStatus::line) {
    std::string how = m_child.kill_and_reap();
    std::string why = read == Subprocess::ReadStatus::timeout ? "ran out of time (15 min)"
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
