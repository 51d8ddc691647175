#include "kopt/core/python.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include "kopt/core/process.hpp"

namespace kopt {

std::string choose_python(const std::string& module, const std::filesystem::path& extra_path) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::string> chosen;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(module, extra_path.string());
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  std::string out = "python3";
  if (const char* v = std::getenv("KOPT_PYTHON"); v && *v) {
    out = v;
  } else {
    // A cheap find_spec, no import.
    const std::string probe =
        "import importlib.util, sys\n"
        "if sys.argv[2]: sys.path.insert(0, sys.argv[2])\n"
        "sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)";
    SystemCommandRunner runner;
    for (const char* candidate : {"python3", "/usr/bin/python3", "python"}) {
      auto found = find_program(candidate);
      if (!found) continue;
      CommandResult r = runner.run({found->string(), "-c", probe, module, extra_path.string()},
                                   std::chrono::seconds(20));
      if (r.exit_code == 0) {
        out = found->string();
        break;
      }
    }
  }
  chosen[key] = out;
  return out;
}

}  // namespace kopt
