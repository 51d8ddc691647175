#pragma once
// An NVTX push/pop range on the calling thread, as ncu --nvtx records it beside each launch
// (tools/ncu.hpp: ncu_job_range). With no tool attached, NVTX calls do nothing.
#include <string>

namespace kopt::cuda {

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace kopt::cuda
