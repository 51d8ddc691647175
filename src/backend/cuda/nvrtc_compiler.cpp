#include "kopt/backend/cuda/nvrtc_compiler.hpp"

#include <chrono>
#include <memory>

#include "dynlib.hpp"
#include "kopt/backend/cubin_resources.hpp"
#include "kopt/core/fs.hpp"
#include "nvrtc_api.hpp"

namespace kopt::cuda {
namespace fs = std::filesystem;

// Every NVRTC call goes through this: it keeps the call text and file:line (docs/architecture.md
// §5).
#define KOPT_NVRTC_CHECK(api, call)                                                      \
  do {                                                                                   \
    nvrtcResult kopt_r_ = (call);                                                        \
    if (kopt_r_ != NVRTC_SUCCESS)                                                        \
      return Unexpected(internal_error(std::string(#call) + " failed at " __FILE__ ":" + \
                                       std::to_string(__LINE__) + ": " +                 \
                                       (api)->get_error_string(kopt_r_)));               \
  } while (0)

Expected<std::string> NvrtcCompiler::toolkit() {
  auto api = nvrtc_api();
  if (!api) return Unexpected(api.error());
  return "NVRTC " + std::to_string((*api)->major) + "." + std::to_string((*api)->minor);
}

std::vector<fs::path> cuda_include_dirs() {
  std::vector<fs::path> existing;
  for (const auto& root : toolkit_roots())
    if (fs::path p = fs::path(root) / "include";
        fs::is_regular_file(p / "cuda_runtime.h") &&
        std::find(existing.begin(), existing.end(), p) == existing.end())
      existing.push_back(p);
  return existing;
}

Expected<std::vector<std::string>> nvrtc_supported_archs() {
  auto api = nvrtc_api();
  if (!api) return Unexpected(api.error());
  int n = 0;
  KOPT_NVRTC_CHECK(*api, (*api)->get_num_supported_archs(&n));
  std::vector<int> archs(static_cast<std::size_t>(n));
  KOPT_NVRTC_CHECK(*api, (*api)->get_supported_archs(archs.data()));
  std::vector<std::string> out;
  for (int a : archs) out.push_back("sm_" + std::to_string(a));
  return out;
}

Expected<Build> NvrtcCompiler::compile(const CompileRequest& req, const fs::path& cubin_path) {
  if (!req.refused.empty()) return refused_build(req);
  if (req.solve_abi) return compile_solve_library(req, cubin_path);
  auto loaded = nvrtc_api();
  if (!loaded) return Unexpected(loaded.error());
  const NvrtcApi* api = *loaded;
  auto start = std::chrono::steady_clock::now();

  nvrtcProgram prog = nullptr;
  std::string name = req.source_path.string();
  KOPT_NVRTC_CHECK(
      api, api->create_program(&prog, req.source_text.c_str(), name.c_str(), 0, nullptr, nullptr));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) {
    if (auto a = nvrtc_api(); a && *p) (*a)->destroy_program(p);
  });
  KOPT_NVRTC_CHECK(api, api->add_name_expression(prog, req.entry.c_str()));

  std::vector<std::string> opts = {"--gpu-architecture=" + req.arch, "-std=c++17", "-lineinfo",
                                   "-Xptxas=-v", "-default-device"};
  for (const auto& [k, v] : req.defines) opts.push_back("-D" + k + "=" + v);
  for (const auto& dir : req.include_dirs) opts.push_back("-I" + dir.string());
  for (const auto& dir : cuda_include_dirs()) opts.push_back("-I" + dir.string());
  for (const auto& o : req.options) opts.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  nvrtcResult compiled = api->compile_program(prog, static_cast<int>(argv.size()), argv.data());
  Build b;
  b.arch = req.arch;
  b.toolkit = "NVRTC " + std::to_string(api->major) + "." + std::to_string(api->minor);
  std::size_t log_size = 0;
  KOPT_NVRTC_CHECK(api, api->get_program_log_size(prog, &log_size));
  b.log.resize(log_size);
  KOPT_NVRTC_CHECK(api, api->get_program_log(prog, b.log.data()));
  while (!b.log.empty() && (b.log.back() == '\0' || b.log.back() == '\n')) b.log.pop_back();
  b.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (compiled != NVRTC_SUCCESS) {
    b.ok = false;
    if (b.log.empty()) b.log = api->get_error_string(compiled);
    return b;
  }
  const char* lowered = nullptr;
  if (api->get_lowered_name(prog, req.entry.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
    b.ok = false;
    b.log += (b.log.empty() ? "" : "\n") + std::string("kopt: entry '") + req.entry +
             "' is not a __global__ function of " + name;
    return b;
  }
  b.lowered_entry = lowered;
  std::size_t cubin_size = 0;
  KOPT_NVRTC_CHECK(api, api->get_cubin_size(prog, &cubin_size));
  std::vector<std::byte> cubin(cubin_size);
  KOPT_NVRTC_CHECK(api, api->get_cubin(prog, reinterpret_cast<char*>(cubin.data())));
  if (auto w = write_file_atomic(cubin_path, cubin); !w) return Unexpected(w.error());
  b.cubin_path = cubin_path;
  // The cubin is the authority; ptxas' report adds spill counts when NVRTC returned one.
  auto from_cubin = cubin_resources(cubin, b.lowered_entry);
  ResourceUsage from_log = parse_ptxas_info(b.log, b.lowered_entry);
  b.resources = from_cubin ? *from_cubin : from_log;
  b.resources.shared_static_bytes = from_log.shared_static_bytes;
  b.resources.spill_store_bytes = from_log.spill_store_bytes;
  b.resources.spill_load_bytes = from_log.spill_load_bytes;
  if (b.resources.spill_store_bytes < 0 && b.resources.local_bytes == 0)
    b.resources.spill_store_bytes = b.resources.spill_load_bytes = 0;  // no local frame, no spills
  b.ok = true;
  return b;
}

}  // namespace kopt::cuda
