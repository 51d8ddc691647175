#include "kopt/backend/python/kernelbench_import.hpp"

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
extern const char* const k_kernelbench_import_script;
namespace fs = std::filesystem;
using nlohmann::json;

Expected<json> kernelbench_facts(const fs::path& file, const fs::path& cache_root) {
  if (!fs::is_regular_file(file)) return Unexpected(bad_input("no such file", file.string()));
  fs::path script =
      embedded_python_script(cache_root, "kopt_kernelbench_import", k_kernelbench_import_script);
  SystemCommandRunner runner;
  // Forward runs once on the CPU at the file's own sizes: large problems take a while.
  CommandResult r = runner.run({python_executable(), script.string(), fs::absolute(file).string()},
                               std::chrono::minutes(15));
  if (!r.started)
    return Unexpected(
        environment_error("cannot run " + python_executable() +
                          ": install Python 3 with torch and numpy (pip install torch numpy, or "
                          "apt-get install python3-torch python3-numpy) or set KOPT_PYTHON"));
  if (!r.ok()) {
    std::string why = r.timed_out ? "ran out of time (15 min)" : "failed";
    return Unexpected(internal_error("the KernelBench import script " + why + " on " +
                                     file.string() + ": " +
                                     r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0)));
  }
  try {
    json facts = json::parse(r.out);
    if (facts.contains("error")) {
      std::string e = facts.at("error");
      if (e.find("cannot import torch") != std::string::npos)
        return Unexpected(environment_error(e));
      return Unexpected(bad_input(e, file.string()));
    }
    return facts;
  } catch (const json::exception& e) {
    return Unexpected(
        internal_error("the KernelBench import script printed no JSON: " + r.out.substr(0, 400)));
  }
}

Expected<ImportedProblem> import_kernelbench(const fs::path& file, const fs::path& out_dir,
                                             const fs::path& cache_root, bool force) {
  if (fs::exists(out_dir / "kopt.toml") && !force)
    return Unexpected(bad_input(
        "already holds a kopt.toml; --force replaces the imported files (kopt.toml, ref.py, "
        "model.py) and leaves the rest",
        out_dir.string()));
  auto source = read_text_file(file);
  if (!source) return Unexpected(bad_input(source.error().message, file.string()));
  auto facts = kernelbench_facts(file, cache_root);
  if (!facts) return Unexpected(facts.error());
  auto problem = problem_from_kernelbench(*facts, file.filename().string());
  if (!problem) return Unexpected(problem.error());
  for (const auto& [name, text] :
       {std::pair{"model.py", &*source}, std::pair{"ref.py", &problem->ref_py},
        std::pair{"kopt.toml", &problem->kopt_toml}})
    if (auto w = write_text_atomic(out_dir / name, *text); !w) return Unexpected(w.error());
  // What was written must load: an import that kopt itself cannot read is kopt's bug.
  if (auto loaded = load_problem(out_dir); !loaded)
    return Unexpected(
        internal_error("the imported problem does not load: " + loaded.error().to_string()));
  return problem;
}

}  // namespace kopt
