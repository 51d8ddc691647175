#pragma once
// A kernel's build target: the device's architecture ("sm_90"), or the arch-specific one the
// kernel declares (`arch = "sm_90a"` in [[kernels]]) for instructions such as wgmma that
// only an exact architecture has. "a" targets run on that architecture only; "f" (family)
// targets on it and later minor versions of the same major one (sm_100f: sm_100, sm_103).
#include <optional>
#include <string>
#include <string_view>

#include "kopt/problem/problem.hpp"

namespace kopt {

// "sm_90" -> 90, "sm_90a" -> 90, "sm_100f" -> 100; nullopt for anything else.
std::optional<int> arch_number(std::string_view arch);

// Whether `arch` is a kernel target kopt.toml accepts: sm_<digits>, optionally with an `a`
// or `f` suffix.
bool is_arch_target(std::string_view arch);

// Whether code built for `target` runs on a device whose arch is `device_arch`.
bool arch_runs_on(std::string_view target, std::string_view device_arch);

struct BuildTarget {
  std::string arch;     // what to build for
  std::string refused;  // non-empty: not built; the build fails with this message
};

// The target of `kernel` on a device of `device_arch`: the device's, or the kernel's own
// `arch` when its source is CUDA and the device runs it. Where the device does not, `refused`
// names the spec's file, line and field: "kopt.toml:71: kernels[2].arch: kernel 'wgmma' is
// built for sm_90a, which runs only on sm_90 devices; this device is sm_80".
BuildTarget build_target(const Problem& problem, const KernelSpec& kernel,
                         const std::string& device_arch);

}  // namespace kopt
