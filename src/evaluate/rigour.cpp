#include "kopt/evaluate/rigour.hpp"

#include <algorithm>

namespace kopt::evaluate {

Rigour Rigour::report() {
  Rigour r;
  r.timing.rule.max_time_s = k_bench_max_time_s;
  return r;
}

Rigour Rigour::decide(double max_time_s) {
  Rigour r;
  r.timing.rule.max_time_s = max_time_s;
  r.timing.rule.min_time_s = std::min(0.2, max_time_s);
  r.timing.rule.max_noise = 0.01;
  r.check_in_timing = true;
  r.cap_per_candidate = true;
  return r;
}

Rigour Rigour::screen(const Rigour& full, std::size_t samples) {
  Rigour r = full;
  BenchOptions& o = r.timing;
  o.warmup_s = 0;  // the timer still launches twice before the first sample
  o.rule.min_samples = std::max<std::size_t>(samples, 1);
  o.rule.max_samples = o.rule.min_samples;
  o.rule.min_time_s = 0;
  o.rule.max_noise = 0;  // never stops early on noise: every candidate gets the same budget
  o.rule.plateau_window = o.rule.max_samples + 1;
  r.secret_samples = false;
  r.check_in_timing = true;
  r.cap_per_candidate = true;
  return r;
}

Rigour Rigour::compare(const Rigour& full) {
  Rigour r = full;
  r.timing.rule.max_time_s = std::max(2.0, 2 * full.timing.rule.max_time_s);
  r.cap_per_candidate = false;  // one cap for the pair: it stops once the verdict is decided
  return r;
}

}  // namespace kopt::evaluate
