#include <chrono>
#include <regex>

#include "handles.hpp"
#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/core/fs.hpp"
#include "module_file.hpp"

namespace kopt::opencl {
namespace fs = std::filesystem;

std::string rename_source_in_log(const std::string& log, const std::string& file_name) {
  // PoCL compiles a copy in its cache ("/.../kcache/tempfile_Ab12Cd.cl"), NVIDIA's driver
  // says "<kernel>", others "<source>" or "input.cl"; all are followed by ":LINE:".
  static const std::regex k_driver_name(
      R"((<source>|<stdin>|<kernel>|input\.cl|[^\s:]*tempfile_\w+\.cl)(:\d+))");
  return std::regex_replace(log, k_driver_name, file_name + "$2");
}

Expected<std::vector<DeviceSummary>> list_opencl_devices() {
  auto api = opencl_api();
  if (!api) return Unexpected(api.error());
  auto devices = list_devices(**api);
  if (!devices) return Unexpected(devices.error());
  std::vector<DeviceSummary> out;
  int i = 0;
  for (const auto& d : *devices) {
    DeviceSummary s{i++,
                    d.platform_name,
                    d.name,
                    "",
                    device_string(**api, d.device, CL_DEVICE_VERSION),
                    device_string(**api, d.device, CL_DRIVER_VERSION)};
    s.type = (d.type & CL_DEVICE_TYPE_GPU)   ? "gpu"
             : (d.type & CL_DEVICE_TYPE_CPU) ? "cpu"
                                             : "accelerator";
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::string> OpenclExecutor::toolkit() {
  const DeviceInfo& d = m_session->info;
  return "OpenCL " + d.name + " · " + d.platform + " · driver " + d.driver_release;
}

Expected<Build> OpenclExecutor::compile(const CompileRequest& req, const fs::path& module_path) {
  const Session* s = m_session.get();
  auto start = std::chrono::steady_clock::now();
  ModuleFile m;
  m.source_name = req.source_path.filename().string();
  m.source = req.source_text;
  m.entry = req.entry;
  for (const auto& [k, v] : req.defines) m.options += "-D " + k + "=" + v + " ";
  for (const auto& dir : req.include_dirs) m.options += "-I " + dir.string() + " ";
  for (const auto& o : req.options) m.options += o + " ";
  Build b;
  b.arch = req.arch;
  b.toolkit = *toolkit();
  BuiltProgram built = build_program(*s, m.source, m.options);
  b.log = rename_source_in_log(built.log, req.source_path.string());
  b.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (built.status != CL_SUCCESS) {
    b.ok = false;
    if (b.log.empty()) b.log = "clBuildProgram: " + cl_error_name(built.status);
    return b;
  }
  const OpenclApi& api = *s->api;
  cl_int err = CL_SUCCESS;
  Kernel k(&api, api.create_kernel(built.program.get(), req.entry.c_str(), &err));
  if (err != CL_SUCCESS) {
    b.ok = false;
    b.log += (b.log.empty() ? "" : "\n") + std::string("kopt: entry '") + req.entry +
             "' is not a __kernel of " + req.source_path.string() + " (" + cl_error_name(err) + ")";
    return b;
  }
  cl_device_id dev = s->ref.device;
  auto wg_info = [&](cl_kernel_work_group_info what, auto v) {
    api.get_kernel_work_group_info(k.get(), dev, what, sizeof v, &v, nullptr);
    return v;
  };
  b.resources.local_bytes =
      static_cast<std::int64_t>(wg_info(CL_KERNEL_PRIVATE_MEM_SIZE, cl_ulong{0}));
  b.resources.shared_static_bytes =
      static_cast<std::int64_t>(wg_info(CL_KERNEL_LOCAL_MEM_SIZE, cl_ulong{0}));
  b.resources.max_threads_per_block =
      static_cast<int>(wg_info(CL_KERNEL_WORK_GROUP_SIZE, std::size_t{0}));
  b.resources.source = "opencl";
  if (auto w = write_module_file(module_path, m); !w) return Unexpected(w.error());
  b.cubin_path = module_path;
  b.lowered_entry = req.entry;
  b.ok = true;
  return b;
}

}  // namespace kopt::opencl
