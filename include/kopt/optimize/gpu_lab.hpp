#pragma once
// The Lab on a real machine, over the evaluator (evaluate/evaluator.hpp): measurements at the
// loop's rigour, comparisons interleaved on one device, profiles through ncu, SASS through the
// disassembler, the champion's checks, and the target from the device's roofs.
#include <memory>

#include "kopt/evaluate/evaluator.hpp"
#include "kopt/evaluate/sanitize.hpp"
#include "kopt/optimize/lab.hpp"

namespace kopt::optimize {

struct GpuLabOptions {
  // Per measurement (Rigour::decide of --max-time); comparisons are Rigour::compare of it.
  evaluate::Rigour rigour = evaluate::Rigour::decide(evaluate::k_loop_max_time_s);
  int device = 0;
  std::filesystem::path kopt_executable;
  std::filesystem::path ncu;  // empty: no profiles
  std::string ncu_version;
  // Run on a candidate about to become champion (tools empty: --no-sanitize).
  evaluate::SanitizeRequest sanitize;
};

// Several workers (optimize --gpus, --cluster): measure_all() measures one variant per worker
// at once and a lost worker's variant again on another; comparisons, profiles, SASS and the
// champion's checks run on the first live worker. `ev` outlives the lab.
std::unique_ptr<Lab> make_gpu_lab(evaluate::Evaluator& ev, const MethodCatalog& catalog,
                                  GpuLabOptions options);

}  // namespace kopt::optimize
