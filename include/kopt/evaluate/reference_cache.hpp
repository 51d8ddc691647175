#pragma once
// kopt's cache of reference outputs (CACHE/references/KEY/): one folder per seed and shape of a
// problem, kept so that the next check does not run the reference again. KernelBench's outputs
// reach GBs each, so the cache is bounded: past its bound, the folders used longest ago go.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kopt::evaluate {

// The bound: KOPT_REFERENCE_CACHE_GB where set (0: no reference is kept past its check), else
// a quarter of the cache's file system, at most 32 GiB.
std::uintmax_t reference_cache_bound(const std::filesystem::path& references);

// Marks a folder as used now (the next trim keeps it longest).
void touch_reference(const std::filesystem::path& folder);

// Removes the folders of `references` used longest ago until the rest take at most `bound`
// bytes; those in `keep` (the running check's own) are never removed. Returns what was removed.
std::vector<std::filesystem::path> trim_references(const std::filesystem::path& references,
                                                   std::uintmax_t bound,
                                                   const std::vector<std::filesystem::path>& keep);

}  // namespace kopt::evaluate
