#pragma once
// A Compiler wrapper that keeps every build under a content hash of everything that decides
// the binary (source and local headers, entry, defines, options, arch, toolkit), so the same
// variant is never compiled twice.
#include <filesystem>
#include <mutex>
#include <vector>

#include "kopt/backend/build.hpp"

namespace kopt {

class BuildCache {
 public:
  BuildCache(Compiler& compiler, std::filesystem::path dir);

  // The cache key of a request; an Error if the compiler is unavailable.
  Expected<std::string> key(const CompileRequest& request);
  Expected<Build> build(const CompileRequest& request);
  // Every request, on up to `jobs` threads where the compiler allows it (else one at a
  // time), in the order given. Two requests with one key are built once.
  std::vector<Expected<Build>> build_all(const std::vector<CompileRequest>& requests,
                                         unsigned jobs);
  const std::filesystem::path& dir() const { return m_dir; }

 private:
  Compiler& m_compiler;
  std::filesystem::path m_dir;
};

}  // namespace kopt
