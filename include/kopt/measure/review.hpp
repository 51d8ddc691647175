#pragma once
// Numbers a person should look at before believing them, that neither fail nor flag a
// variant: KernelBench reviews a kernel more than 10x faster than torch eager (it may be a
// fusion eager lacks, or work skipped in a way no other check saw).
#include <optional>
#include <string>

namespace kopt {

inline constexpr double k_review_speedup_over_eager = 10.0;

// The review note for a kernel's median against torch eager's; nullopt at or below 10x.
std::optional<std::string> review_speedup_over_eager(double kernel_median_s, double eager_median_s);

}  // namespace kopt
