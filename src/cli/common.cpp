#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::cli {

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

WorkerOptions worker_options(int device, const std::filesystem::path& log_dir) {
  WorkerOptions wo;
  wo.command = {self_executable().string(), "worker", "--device", std::to_string(device)};
  wo.log_path = log_dir / ("worker" + std::to_string(device) + ".log");
  return wo;
}

Expected<std::map<std::string, std::int64_t>> parse_assignments(const std::vector<std::string>& items,
                                                                 const std::string& flag) {
  std::map<std::string, std::int64_t> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (eq == std::string::npos || name.empty())
      return Unexpected(bad_input(flag + " " + item + ": expected NAME=VALUE"));
    std::string value = item.substr(eq + 1);
    try {
      std::size_t used = 0;
      std::int64_t v = std::stoll(value, &used, 0);
      if (used != value.size()) throw std::invalid_argument(value);
      out[name] = v;
    } catch (const std::exception&) {
      if (value == "true" || value == "false") out[name] = value == "true";
      else return Unexpected(bad_input(flag + " " + item + ": the value must be an integer"));
    }
  }
  return out;
}

Expected<Selected> load_selection(const ProblemSelection& sel) {
  Selected out;
  for (auto [items, flag, target] : {std::tuple{&sel.sets, "--set", &out.sets}, std::tuple{&sel.vs, "--vs", &out.vs},
                                     std::tuple{&sel.dims, "--dim", &out.dims}}) {
    auto parsed = parse_assignments(*items, flag);
    if (!parsed) return Unexpected(parsed.error());
    *target = std::move(*parsed);
  }
  auto problem = load_problem(sel.problem, out.dims);
  if (!problem) return Unexpected(problem.error());
  out.problem = std::move(*problem);
  return out;
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
