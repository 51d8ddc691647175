#pragma once
// How much rigour a measurement gets: the one set of measurement defaults every client of the
// evaluator (bench, tune, optimize, iter, KernelBench batches) draws from. A client says which
// kind it wants and its time cap; how that is measured is decided here.
#include <cstddef>

#include "kopt/backend/bench_job.hpp"

namespace kopt::evaluate {

struct Rigour {
  BenchOptions timing;      // the stopping rule, cache mode, flush, verified samples
  double threshold = 0.01;  // a comparison's two sides closer than this are "the same"
  bool check = true;        // a wrong candidate is never timed
  // Check inside the timing job where it can (each candidate's golden output against the
  // reference's; evaluate/bench_checks.hpp), instead of a check job per candidate first.
  bool check_in_timing = false;
  bool secret_samples = true;  // secret-seed timed samples where the timer allows them
  // The time cap is a timing job's wall time and its candidates take turns: with this, a job
  // of n candidates gets n caps, so each gets what it would get alone.
  bool cap_per_candidate = false;

  // kopt bench's report: at least 10 samples and 0.5 s of GPU time, stop at 0.5 % noise or
  // when the noise stops improving, a 15 s cap, 50 ms of warm-up.
  static Rigour report();
  // What a decision rests on (tune's confirmation, the loop's measurements): stop at 1 % noise,
  // at least min(0.2 s, cap) of GPU time, `max_time_s` per candidate; checked in the timing job.
  static Rigour decide(double max_time_s);
  // Screening ranks and is never a result: `samples` fixed samples, no time-based warm-up
  // (the timer still launches twice first), `full`'s cache mode, flush, verification and cap,
  // and no secret-seed samples (the confirmation of any candidate that may win runs them).
  static Rigour screen(const Rigour& full, std::size_t samples);
  // Two candidates interleaved for a verdict (the loop's champion against a branch, tune's
  // champion against the default): `full`'s rule with a cap of max(2 s, twice full's).
  static Rigour compare(const Rigour& full);
};

// The caps the commands start from (their --max-time defaults).
inline constexpr double k_bench_max_time_s = 15.0;  // kopt bench: per bench
inline constexpr double k_tune_max_time_s = 2.0;    // kopt tune: per full measurement
inline constexpr double k_loop_max_time_s = 1.5;    // kopt optimize, iter: per measurement

}  // namespace kopt::evaluate
