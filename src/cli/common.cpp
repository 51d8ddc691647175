#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/backend/python/triton_compiler.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/tools/tool_probe.hpp"

namespace kopt::cli {

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

SanitizeRequest sanitize_request(CommandRunner& runner, std::vector<std::string> tools,
                                 int device) {
  SanitizeRequest r;
  r.tools = std::move(tools);
  r.device = device;
  r.kopt_executable = self_executable();
  ToolInfo t = probe_tool(runner, "compute-sanitizer");
  if (t.found)
    r.sanitizer = t.path;
  else
    r.missing_reason =
        "compute-sanitizer not found on PATH or in the CUDA toolkit's bin (it ships with the "
        "toolkit)";
  return r;
}

namespace {
std::string g_backend_choice = "auto";
std::optional<Backend> g_backend;
}  // namespace

void set_backend_choice(const std::string& choice) {
  g_backend_choice = choice;
  g_backend.reset();
}

Backend active_backend() {
  if (!g_backend) {
    if (g_backend_choice == "cuda")
      g_backend = Backend::cuda;
    else if (g_backend_choice == "opencl")
      g_backend = Backend::opencl;
    else if (g_backend_choice == "triton")
      g_backend = Backend::triton;
    else if (cuda::probe_driver())
      g_backend = Backend::cuda;
    else if (opencl::list_opencl_devices())
      g_backend = Backend::opencl;
    else
      g_backend = Backend::cuda;
  }
  return *g_backend;
}

void prefer_backend_of(const Problem& p) {
  if (g_backend_choice != "auto" || active_backend() != Backend::cuda) return;
  auto has = [&](KernelLanguage l) {
    return std::any_of(p.kernels.begin(), p.kernels.end(), [&](const KernelSpec& k) {
      auto in_l = [&](const std::filesystem::path& s) { return language_of(s) == l; };
      return in_l(k.source) || std::any_of(k.sources.begin(), k.sources.end(), in_l);
    });
  };
  // Triton kernels run on the same CUDA GPU: a problem with no CUDA C++ kernel gets them.
  if (!has(KernelLanguage::cuda) && has(KernelLanguage::triton)) g_backend = Backend::triton;
}

std::string_view backend_name(Backend b) {
  return b == Backend::opencl ? "opencl" : b == Backend::triton ? "triton" : "cuda";
}

KernelLanguage backend_language(Backend b) {
  return b == Backend::opencl   ? KernelLanguage::opencl
         : b == Backend::triton ? KernelLanguage::triton
                                : KernelLanguage::cuda;
}

Expected<void> backend_device_present() {
  if (active_backend() == Backend::opencl) {
    if (auto d = opencl::list_opencl_devices(); !d) return Unexpected(d.error());
    return {};
  }
  if (auto p = cuda::probe_driver(); !p) return Unexpected(p.error());
  return {};
}

Expected<std::vector<int>> select_devices(const std::string& gpus, int default_device) {
  if (gpus.empty()) return std::vector<int>{default_device};
  int count = 0;
  if (active_backend() == Backend::opencl) {
    auto d = opencl::list_opencl_devices();
    if (!d) return Unexpected(d.error());
    count = static_cast<int>(d->size());
  } else {
    auto p = cuda::probe_driver();
    if (!p) return Unexpected(p.error());
    count = p->device_count;
  }
  std::string have = "this machine has " + std::to_string(count) + " device(s)" +
                     (count > 0 ? " (0-" + std::to_string(count - 1) + ")" : "");
  std::vector<int> out;
  if (gpus == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    if (out.empty()) return Unexpected(environment_error("--gpus all: " + have));
    return out;
  }
  std::size_t at = 0;
  while (at <= gpus.size()) {
    std::size_t comma = gpus.find(',', at);
    std::string item = gpus.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int n = -1;
    try {
      std::size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = -1;
    } catch (const std::exception&) {
    }
    if (n < 0)
      return Unexpected(bad_input("--gpus " + gpus + ": '" + item +
                                  "' is not a device ordinal (all, or N,M,...)"));
    if (n >= count)
      return Unexpected(
          bad_input("--gpus " + gpus + ": no device " + std::to_string(n) + "; " + have));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return Unexpected(
          bad_input("--gpus " + gpus + ": device " + std::to_string(n) + " named twice"));
    out.push_back(n);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::unique_ptr<Compiler> make_compiler(WorkerClient& worker) {
  // OpenCL builds need the device's driver: they happen in the worker, which owns the device.
  if (active_backend() == Backend::opencl) return std::make_unique<WorkerCompiler>(worker);
  if (active_backend() == Backend::triton) return std::make_unique<TritonCompiler>();
  return std::make_unique<cuda::NvrtcCompiler>();
}

std::string device_summary(const DeviceInfo& d) {
  if (d.is_opencl())
    return d.name + " (OpenCL " + d.device_type + ", " + std::to_string(d.sm_count) +
           " compute units), " + d.platform + " " + d.driver_release;
  return d.name + " (" + d.arch() + ", " + std::to_string(d.sm_count) + " SMs), driver CUDA " +
         cuda_version_string(d.driver_version);
}

WorkerOptions worker_options(int device, const std::filesystem::path& log_dir,
                             std::optional<Backend> backend) {
  WorkerOptions wo;
  wo.command = {self_executable().string(),
                "worker",
                "--device",
                std::to_string(device),
                "--backend",
                std::string(backend_name(backend.value_or(active_backend())))};
  wo.log_path = log_dir / ("worker" + std::to_string(device) + ".log");
  return wo;
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

Expected<Selected> load_selection(const ProblemSelection& sel) {
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
  prefer_backend_of(*problem);
  if (auto chosen =
          select_language(*problem, backend_language(active_backend()), sel.allow_no_kernels);
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

}  // namespace kopt::cli
