#include "kopt/backend/cuda/nvtx_range.hpp"

#include <nvtx3/nvToolsExt.h>  // header-only: it loads the tool ncu injects, if any

namespace kopt::cuda {

NvtxRange::NvtxRange(const std::string& name) {
  nvtxRangePushA(name.c_str());
}
NvtxRange::~NvtxRange() {
  nvtxRangePop();
}

}  // namespace kopt::cuda
