#include "dynlib.hpp"

#include <dlfcn.h>

#include <cstdlib>

#ifndef KOPT_CUDA_TOOLKIT_ROOT
#define KOPT_CUDA_TOOLKIT_ROOT "/usr/local/cuda"
#endif

namespace kopt::cuda {

Expected<DynLib> DynLib::open(const std::vector<std::string>& candidates, const std::string& what) {
  std::string tried;
  for (const auto& c : candidates) {
    if (void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      DynLib lib;
      lib.m_handle = h;
      lib.m_path = c;
      return lib;
    }
    const char* err = ::dlerror();
    if (tried.empty() && err) tried = std::string(" (") + err + ")";
  }
  std::string names;
  for (const auto& c : candidates) names += (names.empty() ? "" : ", ") + c;
  return Unexpected(environment_error(what + " not found; tried " + names + tried));
}

DynLib::~DynLib() {
  if (m_handle) ::dlclose(m_handle);
}

void* DynLib::symbol(const char* name) const { return m_handle ? ::dlsym(m_handle, name) : nullptr; }

std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& sonames) {
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back(std::string(KOPT_CUDA_TOOLKIT_ROOT) + "/lib64");
  std::vector<std::string> out(sonames.begin(), sonames.end());
  for (const auto& d : dirs)
    for (const auto& s : sonames) out.push_back(d + "/" + s);
  return out;
}

}  // namespace kopt::cuda
