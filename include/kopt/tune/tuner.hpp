#pragma once
// `kopt tune`: search one kernel's parameter space with a strategy and a budget, screening
// candidates in batches and confirming the promising ones with the full measurement
// (tune_stages.hpp). Candidates that do not compile, fault or are wrong are failures the
// search learns from. The champion (always confirmed) is then compared with the default
// point, interleaved, for a verdict outside the noise.
#include <functional>
#include <optional>
#include <string>

#include "kopt/evaluate/evaluator.hpp"
#include "kopt/tune/search.hpp"
#include "kopt/tune/tune_stages.hpp"

namespace kopt::tune {

struct TuneRequest {
  std::string kernel;
  std::map<std::string, std::int64_t> fixed;  // --set: params held at these values
  SearchOptions search;
  // The full measurement (confirmation), from which screening (Rigour::screen) and the final
  // comparison (Rigour::compare) are made.
  evaluate::Rigour full = evaluate::Rigour::decide(evaluate::k_tune_max_time_s);
  std::size_t screen_samples = 15;
  // Candidates screened together (a batch builds on the pool while the previous one runs);
  // kopt tune's --batch and the loop's space screens both start from it.
  static constexpr std::size_t k_screen_batch = 32;
  ConfirmRule confirm;
  // The champion compared with the default point, interleaved, at the end (kopt tune); the
  // loop compares with its own champion instead.
  bool compare_with_default = true;
};

// What one candidate of a batch holds while its timing job runs: its own tensors on the
// device, and in the worker's host memory the golden copy of its outputs (output_verifier.hpp).
struct CandidateFootprint {
  std::uintmax_t device_bytes = 0;
  std::uintmax_t host_bytes = 0;
};
CandidateFootprint candidate_footprint(const Problem& p);

// How many candidates one batch holds: `wanted`, fewer where the candidates' footprints would
// take more than a quarter of the devices' memory, or of their hosts' available memory (an
// OpenCL CPU device's buffers count there too), with the batch split evenly over `devices`;
// at least 1.
std::size_t batch_for_memory(std::size_t wanted, const CandidateFootprint& per,
                             const std::vector<DeviceInfo>& devices);

struct TuneReport {
  std::string problem, kernel;
  std::vector<DeviceInfo> devices;  // every device the screening ran on (--gpus); never empty
  // The first: the roofs are its. Confirmation and the final comparison ran on
  // devices[confirmed_on], the first whose worker was not lost.
  const DeviceInfo& device() const { return devices.front(); }
  std::size_t confirmed_on = 0;
  // What differs between them (clocks, throttling, models), and each worker lost on the way.
  std::vector<std::string> device_notes;
  std::uint64_t space_size = 0;
  ParamPoint default_point;
  TwoStageResult stages;
  std::size_t batch = 1;
  unsigned jobs = 1;
  std::optional<evaluate::BenchReport> final_comparison;  // champion vs default, interleaved
  double compare_s = 0, wall_s = 0;
  double configs_per_min() const;
  int exit_code() const;  // 0 with a champion, 1 when every point failed
};

// Screening batches are spread over the evaluator's workers (a lost worker's slice is
// screened again on another), evaluations tagged with their device; confirmation and the final
// comparison run on the first live one, so each comparison is on one device. Devices of
// different models are refused (bad input) unless the evaluator allows them.
Expected<TuneReport> run_tune(const TuneRequest& request, evaluate::Evaluator& ev);

nlohmann::json to_json(const TuneReport& r);

}  // namespace kopt::tune
