#pragma once
// The Lab on a real machine: measurements through `kopt bench`'s engine (check first, then
// time), comparisons interleaved, profiles through ncu, SASS through the disassembler, and
// the target from measured ceilings or the cited spec table.
#include <memory>

#include "kopt/engine/bencher.hpp"
#include "kopt/engine/lab.hpp"
#include "kopt/engine/sanitize.hpp"

namespace kopt {

struct GpuLabOptions {
  BenchOptions bench;  // per measurement
  double compare_threshold = 0.01;
  double compare_max_time_s = 4.0;
  std::optional<std::string> arch;
  int device = 0;
  std::filesystem::path cache_root;
  std::filesystem::path kopt_executable;
  std::filesystem::path ncu;  // empty: no profiles
  std::string ncu_version;
  // Run on a candidate about to become champion (tools empty: --no-sanitize).
  SanitizeRequest sanitize;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

std::unique_ptr<Lab> make_gpu_lab(const Problem& problem, const MethodCatalog& catalog,
                                  GpuLabOptions options, CheckContext ctx);
// Several workers (optimize --gpus, --cluster): measure_all() measures one variant per worker at
// once and a lost worker's variant again on another; comparisons, profiles, SASS and the
// champion's checks run on the first live worker. One model of device, as tune requires.
std::unique_ptr<Lab> make_gpu_lab(const Problem& problem, const MethodCatalog& catalog,
                                  GpuLabOptions options, std::vector<CheckContext> workers);

}  // namespace kopt
