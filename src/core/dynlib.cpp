#include "kopt/core/dynlib.hpp"

#include <dlfcn.h>

namespace kopt {

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

void* DynLib::symbol(const char* name) const {
  return m_handle ? ::dlsym(m_handle, name) : nullptr;
}

}  // namespace kopt
