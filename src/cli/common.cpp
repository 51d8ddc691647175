#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt::cli {

namespace {
std::string g_backend_choice = "auto";
std::optional<DeviceFamily> g_family;
}  // namespace

void set_backend_choice(const std::string& choice) {
  if (choice == "triton")
    std::cerr << "kopt: --backend triton is --backend cuda now: a problem's Triton kernels run "
                 "beside its CUDA kernels on the CUDA GPU\n";
  g_backend_choice = choice;
  g_family.reset();
}

DeviceFamily device_family() {
  if (!g_family) g_family = evaluate::choose_device_family(g_backend_choice);
  return *g_family;
}

WorkerOptions worker_options(int device, const std::filesystem::path& log_dir) {
  return evaluate::worker_options(device_family(), device, log_dir);
}

std::string device_summary(const DeviceInfo& d) {
  if (d.is_opencl())
    return d.name + " (OpenCL " + d.device_type + ", " + std::to_string(d.sm_count) +
           " compute units), " + d.platform + " " + d.driver_release;
  return d.name + " (" + d.arch() + ", " + std::to_string(d.sm_count) + " SMs), driver CUDA " +
         cuda_version_string(d.driver_version);
}

void add_selection(Command& c, ProblemSelection& sel, const std::string& vs_help) {
  c.options.push_back({.names = "problem",
                       .help = "problem directory, its kopt.toml, or a kernel file (.cu, .cl, .py) "
                               "that kopt init infers the problem of",
                       .target = &sel.problem,
                       .required = true});
  c.options.push_back({.names = "--kernel",
                       .help = "only this kernel (repeatable; default: all of them)",
                       .target = &sel.kernels});
  c.options.push_back(
      {.names = "--set", .help = "parameter value NAME=VALUE (repeatable)", .target = &sel.sets});
  if (!vs_help.empty()) c.options.push_back({.names = "--vs", .help = vs_help, .target = &sel.vs});
  c.options.push_back(
      {.names = "--dim", .help = "override a dim NAME=VALUE (repeatable)", .target = &sel.dims});
  c.options.push_back({.names = "--dims",
                       .help = "dims as NAME=VALUE,NAME=VALUE (the same as --dim for each)",
                       .target = &sel.dim_lists});
  c.options.push_back({.names = "--ref",
                       .help = "the ref.py of a bare kernel file given as the problem (default: "
                               "ref.py beside it)",
                       .target = &sel.ref});
  c.options.push_back({.names = "--arch",
                       .help = "target architecture, e.g. sm_90 (default: the device's)",
                       .target = &sel.arch});
  c.options.push_back({.names = "--device",
                       .help = "device ordinal (CUDA, or OpenCL with --backend opencl: GPUs first)",
                       .target = &sel.device});
}

Option verify_on_option(std::string* target) {
  return {.names = "--verify-on",
          .help =
              "where outputs are compared (with the reference's, and timed samples' with each "
              "other): auto (on the device unless it is a CPU), device, or host (read back)",
          .target = target,
          .choices = {"auto", "device", "host"}};
}

VerifyOn parse_verify_on(const std::string& choice) {
  return parse_enum<VerifyOn>(choice).value_or(VerifyOn::automatic);
}

Expected<std::map<std::string, std::int64_t>> parse_assignments(
    const std::vector<std::string>& items, const std::string& flag) {
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
      if (value == "true" || value == "false")
        out[name] = value == "true";
      else
        return Unexpected(bad_input(flag + " " + item + ": the value must be an integer"));
    }
  }
  return out;
}

Expected<Selected> load_selection(ProblemSelection& sel) {
  if (auto r = resolve_bare_files(sel); !r) return Unexpected(r.error());
  Selected out;
  for (auto [items, flag, target] :
       {std::tuple{&sel.sets, "--set", &out.sets}, std::tuple{&sel.vs, "--vs", &out.vs},
        std::tuple{&sel.dims, "--dim", &out.dims}}) {
    auto parsed = parse_assignments(*items, flag);
    if (!parsed) return Unexpected(parsed.error());
    *target = std::move(*parsed);
  }
  auto problem = load_problem(sel.problem, out.dims);
  if (!problem) return Unexpected(problem.error());
  if (!sel.file_kernels.empty()) {
    auto& ks = problem->kernels;
    ks.erase(std::remove_if(ks.begin(), ks.end(),
                            [&](const KernelSpec& k) {
                              return std::find(sel.file_kernels.begin(), sel.file_kernels.end(),
                                               k.name) == sel.file_kernels.end();
                            }),
             ks.end());
  }
  if (auto chosen =
          select_runnable(*problem, runnable_languages(device_family()), sel.allow_no_kernels);
      !chosen)
    return Unexpected(chosen.error());
  out.problem = std::move(*problem);
  return out;
}

int report_error(const GlobalOptions& g, const std::string& command, int code,
                 const std::string& message) {
  if (g.json) {
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", command},
                                {"error", message},
                                {"exit_code", code}}
                     .dump(2)
              << "\n";
  }
  std::cerr << "kopt " << command << ": " << message << "\n";
  return code;
}

int report_error(const GlobalOptions& g, const std::string& command, int code,
                 const std::string& message, nlohmann::json* doc) {
  if (!doc) return report_error(g, command, code, message);
  *doc = {{"error", message}, {"exit_code", code}};
  return report_error(GlobalOptions{}, command, code, message);
}

}  // namespace kopt::cli
