#pragma once
// Building a variant: the request, the resulting Build, and the Compiler interface.
// A kernel that does not compile is a Build with ok == false and the log, not an Error:
// Errors are for a missing compiler.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kopt/backend/module_kind.hpp"
#include "kopt/core/error.hpp"

namespace kopt {

struct CompileRequest {
  std::filesystem::path source_path;  // shown in compiler messages, as the user named it
  std::string source_text;
  std::string entry;  // a C++ name; NVRTC lowers it (extern "C" names stay as they are)
  std::vector<std::pair<std::string, std::string>> defines;
  std::vector<std::string> options;  // user options from kopt.toml
  std::vector<std::filesystem::path> include_dirs;
  std::string arch = "sm_90";
  // Non-empty: not compiled; the Build fails (ok == false) with this as its log and is never
  // cached (a kernel's arch target that the device cannot run: problem/arch_target.hpp).
  std::string refused;
  // The solve() contract: nvcc builds the source, with a generated call shim, into a shared
  // library the worker calls (kopt/problem/solve_abi.hpp), instead of NVRTC into a cubin.
  bool solve_abi = false;
};

// Resources of the compiled entry; -1 where unknown.
struct ResourceUsage {
  int registers = -1;
  std::int64_t shared_static_bytes = -1;
  std::int64_t local_bytes = -1;  // per thread, spills included
  std::int64_t spill_store_bytes = -1;
  std::int64_t spill_load_bytes = -1;
  std::int64_t const_bytes = -1;
  int max_threads_per_block = -1;
  std::string source;  // "ptxas" (compile-time report) or "driver" (cuFuncGetAttribute)
};

struct Build {
  bool ok = false;
  std::string log;  // compiler messages, with the user's file name and line numbers
  std::string lowered_entry;
  std::filesystem::path cubin_path;  // in the build cache
  std::string key;                   // content hash of everything that determines the binary
  std::string arch;
  std::string toolkit;  // e.g. "NVRTC 13.0"
  ResourceUsage resources;
  bool from_cache = false;
  double compile_ms = 0.0;
  ModuleKind module_kind = ModuleKind::cubin;  // a Triton build is the kernel's .py
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // e.g. "NVRTC 13.0"; part of every cache key. An Error if the compiler is unavailable.
  virtual Expected<std::string> toolkit() = 0;
  // The toolkit that builds `request` (part of its cache key); a compiler of several
  // languages answers per request.
  virtual Expected<std::string> toolkit_for(const CompileRequest&) { return toolkit(); }
  // Compiles into `cubin_path`. Compile errors are a Build with ok == false.
  virtual Expected<Build> compile(const CompileRequest& request,
                                  const std::filesystem::path& cubin_path) = 0;
  // Whether compile() may run on several threads at once (NVRTC may; a worker that builds
  // one request at a time may not).
  virtual bool concurrent() const { return false; }
};

// The failed Build of a request that is refused (CompileRequest::refused): its reason as the log.
Build refused_build(const CompileRequest& request);

// Parses "ptxas info : Used 32 registers, 8 bytes smem, 0 bytes spill stores..." lines of a
// compile log for the function named `lowered_entry`.
ResourceUsage parse_ptxas_info(const std::string& log, const std::string& lowered_entry);

// JSON with the member names as keys; missing keys keep their defaults.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ResourceUsage, registers, shared_static_bytes,
                                                local_bytes, spill_store_bytes, spill_load_bytes,
                                                const_bytes, max_threads_per_block, source)
nlohmann::json to_json(const Build& b);
Build build_from_json(const nlohmann::json& j);
// For a worker that builds (OpenCL): the request crosses the protocol.
nlohmann::json to_json(const CompileRequest& r);
CompileRequest compile_request_from_json(const nlohmann::json& j);

}  // namespace kopt
