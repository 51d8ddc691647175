#pragma once
// A kernel's resources read from its cubin (an ELF file): registers from EIATTR_REGCOUNT
// and the local frame from EIATTR_FRAME_SIZE in .nv.info, the constant bank from the size
// of .nv.constant0.<fn>. Deterministic, unlike ptxas' -v report, which some NVRTC builds
// (seen: CUDA 13.0 on Ubuntu 24.04) return only for the first compile in a process.
// Not here: spill counts (not in the cubin), and static shared memory — .nv.shared.<fn>
// sometimes includes the 1 KiB per block that sm_80+ reserves and sometimes not, so its
// size is no measure; ptxas or the driver supply it.
#include <cstddef>
#include <span>
#include <string>

#include "kopt/backend/build.hpp"

namespace kopt {

Expected<ResourceUsage> cubin_resources(std::span<const std::byte> elf,
                                        const std::string& function);

}  // namespace kopt
