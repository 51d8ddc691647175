#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace kopt::cli {

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

int report_error(const GlobalOptions& g, const std::string& command, int code, const std::string& message) {
  if (g.json) {
    std::cout << nlohmann::json{{"schema_version", 1}, {"command", command}, {"error", message},
                                {"exit_code", code}}
                     .dump(2)
              << "\n";
  }
  std::cerr << "kopt " << command << ": " << message << "\n";
  return code;
}

}  // namespace kopt::cli
