// `kopt import kernelbench FILE.py --out DIR`: a KernelBench problem as a kopt problem.
#include <iostream>

#include "commands.hpp"
#include "kopt/backend/python/kernelbench_import.hpp"
#include "kopt/core/fs.hpp"

namespace kopt::cli {

int run_import_kernelbench_command(const GlobalOptions& g, const ImportCliOptions& o) {
  auto imported = import_kernelbench(o.file, o.out, cache_dir(), o.force);
  if (!imported)
    return report_error(g, "import kernelbench", exit_code(imported.error().kind), imported.error().to_string());
  if (g.json) {
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", "import kernelbench"},
                                {"problem", imported->name},
                                {"dir", std::filesystem::absolute(o.out).string()},
                                {"files", {"kopt.toml", "ref.py", "model.py"}},
                                {"notes", imported->notes}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "imported " << imported->name << " into " << o.out << ": kopt.toml, ref.py, model.py\n";
  for (const auto& n : imported->notes) std::cout << "  note: " << n << "\n";
  std::cout << "next: add a kernel to " << o.out << "/kopt.toml (a template is at its end), then `kopt check "
            << o.out << "` and `kopt bench " << o.out << " --vs-torch`\n";
  return 0;
}

}  // namespace kopt::cli
