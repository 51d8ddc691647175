#include "kopt/evaluate/devices.hpp"

#include <algorithm>

#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/backend/language_compiler.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/backend/python/triton_compiler.hpp"
#include "kopt/core/process.hpp"

namespace kopt::evaluate {

DeviceFamily choose_device_family(std::string_view choice) {
  if (choice == "opencl") return DeviceFamily::opencl;
  if (choice == "cuda" || choice == "triton") return DeviceFamily::cuda;
  if (cuda::probe_driver()) return DeviceFamily::cuda;
  if (opencl::list_opencl_devices()) return DeviceFamily::opencl;
  return DeviceFamily::cuda;
}

namespace {

// How many devices of the family this machine has.
Expected<int> device_count(DeviceFamily family) {
  if (family == DeviceFamily::opencl) {
    auto d = opencl::list_opencl_devices();
    if (!d) return Unexpected(d.error());
    return static_cast<int>(d->size());
  }
  auto p = cuda::probe_driver();
  if (!p) return Unexpected(p.error());
  return p->device_count;
}

// A compiler of several languages that owns the compilers it routes to.
class FamilyCompiler final : public Compiler {
 public:
  explicit FamilyCompiler(std::vector<std::pair<KernelLanguage, std::unique_ptr<Compiler>>> owned)
      : m_owned(std::move(owned)), m_routes(routes(m_owned)) {}
  Expected<std::string> toolkit() override { return m_routes.toolkit(); }
  Expected<std::string> toolkit_for(const CompileRequest& r) override {
    return m_routes.toolkit_for(r);
  }
  Expected<Build> compile(const CompileRequest& r, const std::filesystem::path& out) override {
    return m_routes.compile(r, out);
  }
  bool concurrent() const override { return m_routes.concurrent(); }

 private:
  static LanguageCompiler routes(
      const std::vector<std::pair<KernelLanguage, std::unique_ptr<Compiler>>>& owned) {
    std::map<KernelLanguage, Compiler*> m;
    for (const auto& [language, compiler] : owned) m[language] = compiler.get();
    return LanguageCompiler(std::move(m));
  }
  std::vector<std::pair<KernelLanguage, std::unique_ptr<Compiler>>> m_owned;
  LanguageCompiler m_routes;
};

}  // namespace

Expected<void> device_present(DeviceFamily family) {
  auto n = device_count(family);
  if (!n) return Unexpected(n.error());
  if (*n == 0)
    return Unexpected(environment_error("no " + std::string(device_family_name(family)) +
                                        " device on this machine"));
  return {};
}

Expected<std::vector<int>> select_devices(DeviceFamily family, const std::string& gpus,
                                          int default_device) {
  if (gpus.empty()) return std::vector<int>{default_device};
  auto counted = device_count(family);
  if (!counted) return Unexpected(counted.error());
  const int count = *counted;
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

WorkerOptions worker_options(DeviceFamily family, int device,
                             const std::filesystem::path& log_dir) {
  WorkerOptions wo;
  wo.command = {self_executable().string(), "worker",    "--device",
                std::to_string(device),     "--backend", std::string(device_family_name(family))};
  wo.log_path = log_dir / ("worker" + std::to_string(device) + ".log");
  return wo;
}

std::unique_ptr<Compiler> make_compiler(DeviceFamily family, WorkerClient& worker) {
  std::vector<std::pair<KernelLanguage, std::unique_ptr<Compiler>>> owned;
  // OpenCL builds need the device's driver: they happen in the worker, which owns the device.
  if (family == DeviceFamily::opencl) {
    owned.emplace_back(KernelLanguage::opencl, std::make_unique<WorkerCompiler>(worker));
  } else {
    owned.emplace_back(KernelLanguage::cuda, std::make_unique<cuda::NvrtcCompiler>());
    owned.emplace_back(KernelLanguage::triton, std::make_unique<TritonCompiler>());
  }
  return std::make_unique<FamilyCompiler>(std::move(owned));
}

}  // namespace kopt::evaluate
