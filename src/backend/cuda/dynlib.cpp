#include "dynlib.hpp"

#include <cstdlib>

#ifndef KOPT_CUDA_TOOLKIT_ROOT
#define KOPT_CUDA_TOOLKIT_ROOT "/usr/local/cuda"
#endif

namespace kopt::cuda {

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
