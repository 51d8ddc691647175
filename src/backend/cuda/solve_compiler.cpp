// The solve() contract's build: nvcc compiles the user's .cu, with a generated call shim
// appended, into a shared library (kopt/problem/solve_abi.hpp).
#include <chrono>

#include "dynlib.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/solve_abi.hpp"

namespace kopt::cuda {
namespace fs = std::filesystem;

namespace {

std::optional<fs::path> find_nvcc() {
  std::vector<fs::path> dirs;
  for (const auto& root : toolkit_roots()) dirs.emplace_back(fs::path(root) / "bin");
  return find_program("nvcc", dirs);
}

// -gencode=arch=compute_90a,code=[sm_90a,compute_90a]: the target's SASS and PTX, as -arch
// gives for a plain sm_90. nvcc 13.0's -arch=sm_90a shorthand also runs a plain sm_90 pass,
// which rejects the instructions only sm_90a has (wgmma).
std::string gencode(const std::string& arch) {
  if (!arch.starts_with("sm_")) return "-arch=" + arch;
  std::string compute = "compute_" + arch.substr(3);
  return "-gencode=arch=" + compute + ",code=[" + arch + "," + compute + "]";
}

}  // namespace

Expected<Build> compile_solve_library(const CompileRequest& req, const fs::path& library_path) {
  auto start = std::chrono::steady_clock::now();
  Build b;
  b.arch = req.arch;
  b.module_kind = ModuleKind::solve_library;
  b.resources.source = "solve (nvcc -shared)";
  auto nvcc = find_nvcc();
  if (!nvcc)
    return Unexpected(
        environment_error("a solve() kernel is built with nvcc, and there is none on PATH, in "
                          "$CUDA_HOME/bin or /usr/local/cuda/bin: install the CUDA toolkit"));
  b.toolkit = "nvcc (" + nvcc->string() + ")";
  auto params = parse_solve_signature(req.source_text, req.entry, req.source_path.string());
  if (!params) {
    b.log = req.source_path.string() + ":" + std::to_string(params.error().line) + ": " +
            params.error().message;
    return b;
  }
  // #line keeps nvcc's messages at the user's file and lines; the shim follows the source.
  std::string text =
      "#line 1 \"" + req.source_path.string() + "\"\n" + req.source_text +
      "\n#line 1 \"kopt_solve_shim\"\n" +
      solve_shim_source(*params, req.entry, solve_returns_message(req.source_text, req.entry));
  fs::path unit = library_path.parent_path() / "solve_unit.cu";
  if (auto w = write_text_atomic(unit, text); !w) return Unexpected(w.error());
  std::vector<std::string> argv = {nvcc->string(),    "-shared",    "-Xcompiler",
                                   "-fPIC",           "-std=c++17", "-lineinfo",
                                   gencode(req.arch), "-o",         library_path.string()};
  for (const auto& [k, v] : req.defines) argv.push_back("-D" + k + "=" + v);
  for (const auto& dir : req.include_dirs) argv.push_back("-I" + dir.string());
  for (const auto& o : req.options) argv.push_back(o);
  // A library linked against the toolkit's own (-lcublas) finds them where nvcc did, without
  // LD_LIBRARY_PATH: the toolkit's library folders go into its run path.
  std::error_code ec;
  fs::path toolkit = nvcc->parent_path().parent_path();
  for (const auto& lib : {toolkit / "lib64", toolkit / "targets" / "x86_64-linux" / "lib"})
    if (fs::is_directory(lib, ec)) argv.push_back("-Xlinker=-rpath=" + lib.string());
  argv.push_back(unit.string());
  CommandResult r = SystemCommandRunner().run(argv, std::chrono::minutes(5));
  b.log = r.out + r.err;
  while (!b.log.empty() && b.log.back() == '\n') b.log.pop_back();
  b.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok()) {
    if (b.log.empty()) b.log = r.timed_out ? "nvcc ran out of time (5 min)" : "nvcc failed";
    return b;
  }
  b.cubin_path = library_path;
  b.lowered_entry = "kopt_solve_shim";
  b.ok = true;
  return b;
}

}  // namespace kopt::cuda
