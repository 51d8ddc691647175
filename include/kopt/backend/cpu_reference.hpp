#pragma once
// C++ references on the CPU: built into a shared library with the system's C++ compiler,
// called in the worker through a small C ABI (docs/problem-spec.md, "C++ reference"):
//
//   extern "C" int ENTRY(void** args);
//
// args[i] is, in the order of the reference's `args` list, a pointer to the tensor's host
// data (T*, row-major) or a pointer to the scalar's value in its declared dtype
// (const int32_t* by default). Return 0 on success, anything else on failure.
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/backend/run_job.hpp"
#include "kopt/core/process.hpp"

namespace kopt {

struct CpuReferenceBuild {
  bool ok = false;
  std::filesystem::path library;
  std::string log;
  bool from_cache = false;
};

// Compiles `source` into a cached shared library ($CXX, else c++).
Expected<CpuReferenceBuild> build_cpu_reference(CommandRunner& runner,
                                                const std::filesystem::path& source,
                                                const std::vector<std::string>& cxx_flags,
                                                const std::filesystem::path& cache_root);

// Runs a cpu_library job in this process (the worker's).
RunResult run_cpu_reference(const RunJob& job);

}  // namespace kopt
