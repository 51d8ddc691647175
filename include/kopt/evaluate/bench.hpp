#pragma once
// The timing pipeline of the evaluator (evaluator.hpp): time candidates in the worker with the
// policy of BenchOptions; summarize, derive rates from the spec's cost formulas, check against
// the roofline floor, and compare two candidates measured interleaved.
#include <optional>
#include <string>
#include <vector>

#include "kopt/backend/bench_job.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/roofs.hpp"
#include "kopt/measure/distribution_flags.hpp"
#include "kopt/measure/variant_status.hpp"

namespace kopt::evaluate {

struct BenchVariantSpec {
  std::string kernel;
  std::map<std::string, std::int64_t> sets;
};

struct BenchRequest {
  std::vector<BenchVariantSpec> variants;  // several timed side by side, or A and B compared
  bool compare = false;                    // two variants, sampled in pairs, with a verdict
  BenchOptions options;
  double threshold = 0.01;  // for the verdict
  bool check_first = true;  // a wrong kernel is not timed
  // Variants that fail to build or are wrong are reported and the others timed; false: any
  // failure leaves every variant untimed (what a comparison needs: both or none).
  bool time_the_rest = false;
  unsigned jobs = 1;  // builds on up to this many threads
  // With check_first: check inside the timing job where it can be (kernels of the CUDA or
  // OpenCL timers, outputs only, no inout, verified samples on): each variant's golden output
  // against the reference's, no separate check run per variant. Elsewhere the separate check.
  bool check_in_timing = false;
  // Secret-seed samples in the timing job (output_verifier.hpp), where the timer allows them:
  // a secret seed's inputs and the reference's outputs for them, computed afresh each call.
  bool secret_samples = true;
  // Also time the PyTorch reference (ref.py) eagerly and through torch.compile, in the
  // Python worker, with the same options and schedule: rows "torch eager", "torch.compile".
  bool vs_torch = false;
  std::optional<std::string> arch;
  std::filesystem::path cache_root;
  std::filesystem::path references_root;  // where its checks keep the reference's outputs
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

struct BenchVariant {
  std::string kernel;
  ParamPoint point;
  Build build;
  SampleSeries series;
  Summary summary;
  std::size_t throttled_samples = 0;
  double gbps = 0;                   // from the cost formula `bytes` and the median time
  double gflops = 0;                 // from `flops`
  double pct_bandwidth_ceiling = 0;  // of the memory roof (BenchReport::roofs)
  // of the compute roof of the problem's precision (BenchReport::compute_roof)
  double pct_compute_ceiling = 0;
  double floor_s = 0;  // the roofline floor, when a roof is known
  double check_s = 0;  // kopt check's run of it (check_first), not its build
  // The precision its number was obtained in: its matrix instructions' operands, read by kopt
  // check from the machine code (none, with the note, where they were not read).
  std::optional<PrecisionFinding> precision;
  std::string precision_note;
  VariantStatus status = VariantStatus::ok;
  std::string error;
  // Shapes of the series an honest kernel does not produce (distribution_flags.hpp): shown,
  // recorded, and a reason to refuse the variant as a champion; the status stays ok.
  std::vector<DistributionFlag> flags;
  // What a person should look at before believing the number, that neither fails nor flags
  // the variant: a speedup over torch eager above 10x (KernelBench's rule for review).
  std::vector<std::string> reviews;
  // The worker that measured it, where the bench had several (--gpus, --cluster): "worker 1
  // (device 1 ...)"; empty with one.
  std::string device;
};

struct BenchReport {
  std::string problem;
  DeviceInfo device;
  std::string toolkit;
  BenchOptions options;
  std::vector<BenchVariant> variants;
  std::optional<Comparison> comparison;
  Clocks clocks_before, clocks_after;
  std::int64_t flush_bytes = 0;
  std::string flush_method;
  // roofs.source: "measured <date>", "measured now (first use, 4.8 s)", "spec table: ..."
  std::string ceilings_source;
  // Where a candidate's host code ran and how it was confined (core/sandbox.hpp): said for
  // Python candidates and solve() libraries; empty when the table has neither.
  std::string sandbox;
  DeviceRoofs roofs;      // what %BW and the floor divide by, and where they come from
  RoofRate compute_roof;  // what %FLOP divides by: the roof of the problem's precision
  Cost cost;              // the problem's cost formulas at its dims; no flops: GFLOP/s unknown
  // Where this run's wall time went: builds (in parallel), the check, the timing job, in all.
  double build_s = 0, check_s = 0, measure_s = 0, wall_s = 0;
  int exit_code() const;
};

// The timing pipeline on one worker: points resolved, builds (on up to `jobs` threads, from
// the cache where they are there), the check (separate, or inside the timing job), one timing
// job, then verification, the rates, the roofline floor and distribution flags. Clients call
// it through the evaluator (evaluator.hpp), which makes the request from their rigour.
Expected<BenchReport> run_bench(const Problem& problem, const BenchRequest& request,
                                CheckContext ctx);

nlohmann::json to_json(const BenchReport& r);

// Whether a variant's kernel names --vs-torch's eager row: "torch eager", or "torch eager
// (reference())" where ref.py has no baseline().
bool is_torch_eager_row(const std::string& kernel);

}  // namespace kopt::evaluate
