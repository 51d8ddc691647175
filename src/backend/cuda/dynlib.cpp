#include "dynlib.hpp"

#include <cstdlib>

#ifndef KOPT_CUDA_TOOLKIT_ROOT
#define KOPT_CUDA_TOOLKIT_ROOT "/usr/local/cuda"
#endif

namespace kopt::cuda {

std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  roots.emplace_back(KOPT_CUDA_TOOLKIT_ROOT);
  return roots;
}

std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& sonames) {
  std::vector<std::string> out(sonames.begin(), sonames.end());
  for (const auto& root : toolkit_roots())
    for (const auto& s : sonames) out.push_back(root + "/lib64/" + s);
  return out;
}

}  // namespace kopt::cuda
