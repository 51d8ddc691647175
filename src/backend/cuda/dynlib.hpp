#pragma once
// Where the CUDA toolkit's libraries are looked for; DynLib itself is in core/.
#include <string>
#include <vector>

#include "kopt/core/dynlib.hpp"

namespace kopt::cuda {

// Candidate paths for a CUDA toolkit library: the bare soname first (the loader's search
// path), then $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 and the build's toolkit.
std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& sonames);

// Where a CUDA toolkit may be installed, in order: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda,
// and the toolkit kopt was built with. Its lib64/, include/ and bin/ are looked in.
std::vector<std::string> toolkit_roots();

}  // namespace kopt::cuda
