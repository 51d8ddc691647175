// `kopt env`: what is here. Every missing piece is reported; none is fatal.
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/sandbox.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/tools/tool_probe.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::cli {
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct EnvOptions {
  bool probe_ncu = true;
};

json gather(const EnvOptions& o) {
  SystemCommandRunner runner;
  json env{{"schema_version", 1}, {"command", "env"}, {"kopt_version", KOPT_VERSION}};
  utsname u{};
  ::uname(&u);
  env["host"] = {{"os", std::string(u.sysname) + " " + u.release},
                 {"machine", u.machine},
                 {"cpus", std::thread::hardware_concurrency()}};

  json driver{{"found", false}};
  json gpus = json::array();
  auto probe = cuda::probe_driver();
  if (probe) {
    driver = {{"found", true},
              {"library", probe->library_path},
              {"cuda_version", cuda_version_string(probe->driver_version)},
              {"device_count", probe->device_count}};
    TempDir tmp("kopt-env");
    for (int i = 0; i < probe->device_count; ++i) {
      WorkerClient worker(evaluate::worker_options(DeviceFamily::cuda, i, tmp.path()));
      auto info = worker.device_info();
      gpus.push_back(info ? to_json(*info) : json{{"ordinal", i}, {"error", info.error().message}});
    }
  } else {
    driver["error"] = probe.error().message;
  }
  env["driver"] = driver;
  env["gpus"] = gpus;
  json ocl{{"found", false}, {"devices", json::array()}};
  if (auto devices = opencl::list_opencl_devices()) {
    ocl["found"] = true;
    for (const auto& d : *devices)
      ocl["devices"].push_back({{"ordinal", d.ordinal},
                                {"platform", d.platform},
                                {"name", d.name},
                                {"type", d.type},
                                {"version", d.version},
                                {"driver", d.driver}});
  } else {
    ocl["error"] = devices.error().message;
  }
  env["opencl"] = ocl;
  env["backend"] = device_family_name(device_family());

  cuda::NvrtcCompiler nvrtc;
  auto toolkit = nvrtc.toolkit();
  json nv{{"found", bool(toolkit)}};
  if (toolkit) {
    nv["version"] = *toolkit;
    if (auto archs = cuda::nvrtc_supported_archs()) nv["archs"] = *archs;
  } else {
    nv["error"] = toolkit.error().message;
  }
  env["nvrtc"] = nv;

  json tools = json::object();
  for (const char* name : {"nvcc", "ncu", "cuobjdump", "nvdisasm", "compute-sanitizer"})
    tools[name] = to_json(probe_tool(runner, name));
  NcuProbe counters;
  if (!tools["ncu"]["found"].get<bool>()) {
    counters.detail = "ncu not found";
  } else if (gpus.empty() || gpus[0].contains("error")) {
    counters.detail = "no usable GPU to profile";
  } else if (!o.probe_ncu) {
    counters.detail = "skipped (--no-ncu-probe)";
  } else {
    counters = classify_ncu_probe(
        runner.run({tools["ncu"]["path"].get<std::string>(), "--clock-control", "none", "--metrics",
                    "gpu__time_duration.sum", "--csv", self_executable().string(), "probe-kernel"},
                   180s));
  }
  tools["ncu"]["counters"] = {{"access", counter_access_name(counters.access)},
                              {"detail", counters.detail}};
  env["tools"] = tools;

  PythonInfo py = probe_python(runner);
  env["python"] = {{"python3", to_json(py.python)},
                   {"torch", py.torch},
                   {"torch_cuda", py.torch_cuda},
                   {"triton", py.triton},
                   {"note", py.note}};
  const SandboxSupport& sb = sandbox_support();
  env["sandbox"] = {
      {"landlock_abi", sb.landlock_abi},
      {"landlock_why", sb.landlock_why},
      {"seccomp", sb.seccomp},
      {"seccomp_why", sb.seccomp_why},
      {"summary", sb.summary()},
      {"applies_to", "Python candidates (Triton kernels, ModelNew modules)"},
      {"not_confined", "solve() libraries, whose host code runs in kopt's own worker"}};
  return env;
}

std::string or_missing(const json& j, const char* key) {
  std::string v = j.value(key, std::string{});
  return v.empty() ? "missing" : v;
}

void print_human(const json& env) {
  std::cout << fmt::format(
      "kopt {} on {} ({}, {} CPUs)\n\n", env["kopt_version"].get<std::string>(),
      env["host"]["os"].get<std::string>(), env["host"]["machine"].get<std::string>(),
      env["host"]["cpus"].get<unsigned>());
  const json& d = env["driver"];
  if (d["found"].get<bool>())
    std::cout << fmt::format("CUDA driver       {} (CUDA {}), {} device(s)\n",
                             d["library"].get<std::string>(), d["cuda_version"].get<std::string>(),
                             d["device_count"].get<int>());
  else
    std::cout << "CUDA driver       none: " << d["error"].get<std::string>() << "\n              "
              << "kopt still builds kernels with NVRTC and runs every GPU-free command.\n";
  for (const auto& g : env["gpus"]) {
    if (g.contains("error")) {
      std::cout << fmt::format("GPU {}             error: {}\n", g["ordinal"].get<int>(),
                               g["error"].get<std::string>());
      continue;
    }
    const json& c = g["clocks"];
    std::cout << fmt::format(
        "GPU {}             {} [{}] cc {} ({}), {} SMs, L2 {:.1f} MiB, memory {:.1f} GiB\n",
        g["ordinal"].get<int>(), g["name"].get<std::string>(), g["pci_bus_id"].get<std::string>(),
        g["compute_capability"].get<std::string>(), g["arch"].get<std::string>(),
        g["sm_count"].get<int>(), g["l2_bytes"].get<double>() / (1 << 20),
        g["memory_bytes"].get<double>() / (1 << 30));
    if (c["nvml_error"].get<std::string>().empty())
      std::cout << fmt::format(
          "                  clocks SM {} / {} MHz, memory {} / {} MHz (current / max), throttle: "
          "{}, {} C, {:.0f} W\n",
          c["sm_mhz"].get<long>(), c["max_sm_mhz"].get<long>(), c["mem_mhz"].get<long>(),
          c["max_mem_mhz"].get<long>(), c["throttle_reasons"].get<std::string>(),
          c["temperature_c"].get<long>(), c["power_w"].get<double>());
    else
      std::cout << "                  clocks unknown: " << c["nvml_error"].get<std::string>()
                << "\n";
  }
  const json& ocl = env["opencl"];
  if (!ocl["found"].get<bool>())
    std::cout << "OpenCL            none: " << ocl["error"].get<std::string>() << "\n";
  for (const auto& d : ocl["devices"])
    std::cout << fmt::format("OpenCL {}          {} ({}) · {} · {} · driver {}\n",
                             d["ordinal"].get<int>(), d["name"].get<std::string>(),
                             d["type"].get<std::string>(), d["platform"].get<std::string>(),
                             d["version"].get<std::string>(), d["driver"].get<std::string>());
  std::cout << "backend           " << env["backend"].get<std::string>()
            << " (--backend cuda|opencl|auto: a CUDA GPU runs a problem's CUDA, solve() and "
               "Triton kernels side by side)\n";
  const json& nv = env["nvrtc"];
  std::cout << "NVRTC             "
            << (nv["found"].get<bool>() ? nv["version"].get<std::string>()
                                        : "missing: " + nv["error"].get<std::string>())
            << "\n";
  for (const auto& [name, t] : env["tools"].items()) {
    std::cout << fmt::format("{:<18}{}", name,
                             t["found"].get<bool>()
                                 ? or_missing(t, "version") + "  " + t["path"].get<std::string>()
                                 : "missing (" + t["note"].get<std::string>() + ")");
    std::cout << "\n";
    if (name == "ncu")
      std::cout << "                  counters: " << t["counters"]["access"].get<std::string>()
                << " — " << t["counters"]["detail"].get<std::string>() << "\n";
  }
  const json& py = env["python"];
  if (py["python3"]["found"].get<bool>())
    std::cout << fmt::format("python3           {}  torch {}{}  triton {}\n",
                             py["python3"]["version"].get<std::string>(), or_missing(py, "torch"),
                             py["torch_cuda"].get<std::string>().empty()
                                 ? ""
                                 : " (CUDA " + py["torch_cuda"].get<std::string>() + ")",
                             or_missing(py, "triton"));
  else
    std::cout << "python3           missing\n";
  const json& sb = env["sandbox"];
  std::cout << "sandbox           " << sb["summary"].get<std::string>() << "\n"
            << "                  for " << sb["applies_to"].get<std::string>() << "; not for "
            << sb["not_confined"].get<std::string>() << "\n";
}

int run_env(const GlobalOptions& g, const EnvOptions& o) {
  json env = gather(o);
  if (g.json)
    std::cout << env.dump(2) << "\n";
  else
    print_human(env);
  return 0;
}

}  // namespace

std::vector<Command> env_commands(const GlobalRef& g) {
  auto o = std::make_shared<EnvOptions>();
  Command c{.path = {"env"},
            .help = "what is here: GPUs, driver, CUDA, NVRTC, tools, Python",
            .run = [g, o] { return run_env(*g, *o); },
            .storage = o};
  c.options.push_back({.names = "--no-ncu-probe",
                       .help = "do not run a tiny profile to test counter access",
                       .target = &o->probe_ncu,
                       .negates = true});
  return {c};
}

}  // namespace kopt::cli
