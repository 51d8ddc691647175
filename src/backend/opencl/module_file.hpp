#pragma once
// What an OpenCL "module" on disk holds: the source and the build options, as JSON. The
// compiler writes it; the worker builds it for its context (drivers cache the result).
#include <filesystem>
#include <string>

#include "kopt/core/error.hpp"

namespace kopt::opencl {

struct ModuleFile {
  std::string source_name;
  std::string source;
  std::string options;
  std::string entry;
};
Expected<void> write_module_file(const std::filesystem::path& path, const ModuleFile& m);
Expected<ModuleFile> read_module_file(const std::filesystem::path& path);

}  // namespace kopt::opencl
