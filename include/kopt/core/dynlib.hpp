#pragma once
// A shared library opened at run time (dlopen), so kopt starts where it is missing.
#include <memory>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"

namespace kopt {

class DynLib {
 public:
  // Tries each candidate name in turn; the error lists what was tried and dlerror().
  static Expected<DynLib> open(const std::vector<std::string>& candidates, const std::string& what);
  DynLib() = default;
  DynLib(DynLib&& o) noexcept : m_handle(o.m_handle), m_path(std::move(o.m_path)) {
    o.m_handle = nullptr;
  }
  DynLib& operator=(DynLib&& o) noexcept {
    std::swap(m_handle, o.m_handle);
    std::swap(m_path, o.m_path);
    return *this;
  }
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  ~DynLib();

  void* symbol(const char* name) const;
  const std::string& path() const { return m_path; }  // the candidate that loaded

 private:
  void* m_handle = nullptr;
  std::string m_path;
};

// Loads an API table once per process: `load` runs on first use, thread-safely, and its
// result (the table, or why it could not be had) is kept for every later call.
template <class Api, class Load>
Expected<const Api*> load_once(Load load) {
  static const Expected<std::unique_ptr<Api>> loaded = load();
  if (!loaded) return Unexpected(loaded.error());
  return loaded->get();
}

}  // namespace kopt
