#pragma once
// `kopt tune`: search one kernel's parameter space with a strategy and a budget, screening
// candidates in batches and confirming the promising ones with the full measurement
// (tune_stages.hpp). Candidates that do not compile, fault or are wrong are failures the
// search learns from. The champion (always confirmed) is then compared with the default
// point, interleaved, for a verdict outside the noise.
#include <functional>
#include <optional>
#include <string>

#include "kopt/engine/bencher.hpp"
#include "kopt/engine/search/search.hpp"
#include "kopt/engine/tune_stages.hpp"

namespace kopt {

struct TuneRequest {
  std::string kernel;
  std::map<std::string, std::int64_t> fixed;  // --set: params held at these values
  SearchOptions search;
  BenchOptions bench;   // the full measurement: confirmation and the final comparison
  BenchOptions screen;  // the screening measurement (screen_options())
  ConfirmRule confirm;
  unsigned jobs = 1;         // builds on up to this many threads
  bool allow_mixed = false;  // several devices of different models (--allow-mixed)
  double threshold = 0.01;   // for the final verdict
  std::optional<std::string> arch;
  std::filesystem::path cache_root;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// The screening measurement: `full`'s cache mode, flush and verification, a fixed number of
// samples, no time-based warm-up (two launches), capped by full's time cap.
BenchOptions screen_options(const BenchOptions& full, std::size_t samples);

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
  std::optional<BenchReport> final_comparison;  // champion vs default, interleaved
  double compare_s = 0, wall_s = 0;
  double configs_per_min() const;
  int exit_code() const;  // 0 with a champion, 1 when every point failed
};

Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request, CheckContext ctx);
// Several devices (tune --gpus, --cluster), one context each (a worker per device, and a
// compiler each where builds happen in the worker): screening batches are split over them by
// a Dispatcher (a lost worker's slice is screened again on another), evaluations tagged with
// their device; confirmation and the final comparison run on the first live one, so each
// comparison is on one device.
// Devices of different models are refused (bad input) unless request.allow_mixed.
Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request,
                              const std::vector<CheckContext>& devices);

nlohmann::json to_json(const TuneReport& r);

}  // namespace kopt
