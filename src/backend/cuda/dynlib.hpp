#pragma once
// Where the CUDA toolkit's libraries are looked for; DynLib itself is in core/.
#include <string>
#include <vector>

#include "kopt/core/dynlib.hpp"

namespace kopt::cuda {

// Candidate paths for a CUDA toolkit library: the bare soname first (the loader's search
// path), then $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 and the build's toolkit.
std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& sonames);

}  // namespace kopt::cuda
