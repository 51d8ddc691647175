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

// kopt's median of a champion against ncu's gpu__time_duration of the same build (one
// launch, caches flushed, clocks left alone: what kopt's cold mode times). Past this relative
// difference one of the two did not time what the other did.
inline constexpr double k_review_ncu_disagreement = 0.25;
std::optional<std::string> review_against_ncu(double kopt_median_s, double ncu_duration_s);

}  // namespace kopt
