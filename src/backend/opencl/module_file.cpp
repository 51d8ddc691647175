#include "module_file.hpp"

#include <nlohmann/json.hpp>

#include "kopt/core/fs.hpp"

namespace kopt::opencl {

Expected<void> write_module_file(const std::filesystem::path& path, const ModuleFile& m) {
  nlohmann::json j{{"format", "kopt-opencl-module-v1"},
                   {"source_name", m.source_name},
                   {"source", m.source},
                   {"options", m.options},
                   {"entry", m.entry}};
  return write_text_atomic(path, j.dump());
}

Expected<ModuleFile> read_module_file(const std::filesystem::path& path) {
  auto text = read_text_file(path);
  if (!text) return Unexpected(text.error());
  try {
    auto j = nlohmann::json::parse(*text);
    if (j.value("format", "") != "kopt-opencl-module-v1")
      return Unexpected(bad_input("not an OpenCL module of kopt (a CUDA cubin?)", path.string()));
    return ModuleFile{j.at("source_name"), j.at("source"), j.at("options"), j.at("entry")};
  } catch (const std::exception& e) {
    return Unexpected(
        bad_input(std::string("not an OpenCL module of kopt: ") + e.what(), path.string()));
  }
}

}  // namespace kopt::opencl
