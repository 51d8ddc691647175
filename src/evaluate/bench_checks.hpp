#pragma once
// How kopt bench keeps wrong kernels untimed (bencher.cpp): a check of every variant before
// the timing job, or, where it holds, the check inside the timing job itself (each variant's
// golden output against seed 1's reference outputs, output_verifier.hpp).
#include <vector>

#include "kopt/evaluate/bench.hpp"

namespace kopt::evaluate {

// Whether the check can be made inside the timing job: asked for (check_in_timing), not a
// comparison, verified samples on (the golden output is taken), and every variant timed by the CUDA
// or OpenCL timer (not a Python variant, not a C++ library).
bool check_in_timing_possible(const Problem& p, const BenchRequest& r,
                              const std::vector<BenchVariant>& variants);
// Whether the timing job can run secret-seed samples: asked for, verified samples on, outputs
// only (no inout), every variant timed by the CUDA or OpenCL timer.
bool secret_samples_possible(const Problem& p, const BenchRequest& r,
                             const std::vector<BenchVariant>& variants);
// Whether the timing job checks the problem's inouts against the reference whatever else it
// does: an inout's golden launch starts from seed 1's values, as the check's launch did, and a
// kernel that works on the launches a separate check makes and skips later ones is caught
// there (the timed samples are compared with that golden output).
bool inouts_checked_in_timing(const Problem& p, const BenchRequest& r,
                              const std::vector<BenchVariant>& variants);

// Seed 1's reference outputs (computed once, then from the cache) and their tolerances; with
// `secret_dir`, also a secret seed (drawn now): its inputs and the reference's outputs for
// them, computed afresh and kept there.
Expected<CheckReport> seed_reference(const Problem& p, const BenchRequest& r, CheckContext ctx,
                                     const std::filesystem::path& secret_dir = {});

// Points the job's outputs at the reference's files (with `golden`: the check inside the job;
// inouts always),
// at the checker's tolerance, and its tensors at the secret seed's files where there are some.
void expect_reference(RunJob& job, const CheckReport& reference, bool golden = true);

// Variants whose golden output differed from the reference's (or that wrote an input) in the
// timing job were never timed: wrong, as the separate check would have said.
void mark_wrong(std::vector<BenchVariant>& variants, const BenchResult& result);

// The separate check: one seed against the (cached) reference, every ok variant in one
// kopt check (one set of inputs and references, builds already cached); wrong ones marked.
Expected<void> check_variants(const Problem& p, const BenchRequest& r, CheckContext ctx,
                              std::vector<BenchVariant>& variants);

}  // namespace kopt::evaluate
