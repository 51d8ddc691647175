#pragma once
// The one evaluator: candidates flow through build (on a pool of threads, ahead of the device)
// -> check (poisoned outputs, seeds, the reference) -> time -> verify (poisoned timed samples,
// secret seeds, the roofline floor) -> optionally profile, on one worker or spread over several
// (one per GPU, or Ray actors). Every client (bench, tune, optimize, iter, KernelBench batches)
// says *what* to evaluate and *how much rigour* (rigour.hpp); none repeats *how*.
//
// A comparison is never split over devices: side_by_side(), compare() and on_one_device() run
// on one worker; spread() hands jobs to every live worker, and a job whose worker is lost runs
// once more on another (dispatcher.hpp).
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kopt/evaluate/bench.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/dispatcher.hpp"
#include "kopt/evaluate/profiler.hpp"
#include "kopt/evaluate/rigour.hpp"
#include "kopt/evaluate/roofs.hpp"

namespace kopt {
class BuildQueue;
}

namespace kopt::evaluate {

// What to evaluate: a kernel of the problem at a point, from the problem's source or another
// file (an agent's branch).
struct Candidate {
  std::string kernel;
  std::map<std::string, std::int64_t> sets;
  std::filesystem::path source;  // empty: the problem's
  bool operator==(const Candidate&) const = default;
};

// The problem one job runs: a candidate with its own source measures a copy of its kernel
// that reads that source. When a kernel comes from several sources in one job (a branch
// against the champion built from the problem's file), each source gets its own copy, named
// "KERNEL [FILE]", and its candidate refers to it.
struct JobProblem {
  Problem problem;
  std::vector<Candidate> candidates;  // as the job names them
};
JobProblem job_problem(const Problem& p, const std::vector<Candidate>& cs);

struct EvaluatorOptions {
  std::optional<std::string> arch;  // default: each worker's device's
  std::filesystem::path cache_root;
  // Where the checks of its timings keep the reference's outputs (GBs for KernelBench's
  // problems); empty: cache_root, for the next run to find.
  std::filesystem::path references_root;
  unsigned jobs = 1;         // builds on up to this many threads
  bool allow_mixed = false;  // devices of different models in one run (--allow-mixed)
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class Evaluator {
 public:
  // One context per worker; the first live one is "home": comparisons, checks, profiles.
  Evaluator(const Problem& problem, std::vector<CheckContext> workers, EvaluatorOptions options);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // --- one job on one worker (default: home) ------------------------------------------------
  // Candidates timed side by side; a candidate that fails to build, is wrong or crashes is a
  // result with its status, and the others are still timed.
  Expected<BenchReport> side_by_side(const std::vector<Candidate>& cs, const Rigour& rigour,
                                     std::optional<std::size_t> worker = std::nullopt);
  // Two candidates interleaved, for a verdict (BenchReport::comparison): both or neither.
  Expected<BenchReport> compare(const Candidate& a, const Candidate& b, const Rigour& rigour);
  // The PyTorch baselines of a ref.py problem (torch eager, torch.compile), beside `cs`.
  Expected<BenchReport> with_baselines(const std::vector<Candidate>& cs, const Rigour& rigour);

  // --- jobs over every live worker ------------------------------------------------------------
  // Each group is a job of its own, one job per live worker at a time; a group whose worker is
  // lost runs once more on another, and one lost twice (or left with no worker) is an
  // environment Error, never a verdict on its candidates. `done(group, worker, report)` is
  // called as each finishes, never two at once. One result per group, in order.
  using GroupDone =
      std::function<void(std::size_t group, std::size_t worker, const Expected<BenchReport>&)>;
  std::vector<Expected<BenchReport>> spread(const std::vector<std::vector<Candidate>>& groups,
                                            const Rigour& rigour, const GroupDone& done = {});
  // Each candidate in a job of its own, spread as above, in one report: each variant tagged
  // with the worker that measured it; the report's device, clocks and roofs are the first
  // live worker's. A candidate whose job could not run is a variant of status error.
  Expected<BenchReport> one_per_worker(const std::vector<Candidate>& cs, const Rigour& rigour);
  // Groups that must all be measured on one device (a confirmation): on the first live
  // worker; when it is lost, all of them again on the next. `worker` says which.
  std::vector<Expected<BenchReport>> on_one_device(
      const std::vector<std::vector<Candidate>>& groups, const Rigour& rigour, std::size_t& worker);

  // --- building ahead -------------------------------------------------------------------------
  // Starts building `cs` on the pool while the device works on earlier jobs; the job that
  // needs them waits for its own builds only. Seconds spent waiting are returned by wait().
  void build_ahead(const std::vector<Candidate>& cs);
  double wait_for_builds(const std::vector<Candidate>& cs);
  // On a fresh cache the roofs are measured on first use, on the device: while `cs` build on
  // the pool (the device has nothing else to do then). Returns {build seconds, roofs seconds
  // past the builds}.
  std::pair<double, double> build_while_measuring_roofs(const std::vector<Candidate>& cs);

  // --- checking and profiling -----------------------------------------------------------------
  // kopt check of one candidate on home, with `options` (seeds, secret seed, dims...), then at
  // the problem's other shape ([check] dims) when it passed and `other_shape`.
  Expected<CheckReport> check(const Candidate& c, CheckOptions options, bool other_shape);
  // Several candidates profiled under ncu in one session on home (profiler.hpp), each one's
  // files under dirs[i], the session's under `session_dir`.
  Expected<std::vector<KernelProfile>> profile(const std::vector<Candidate>& cs,
                                               const std::vector<std::filesystem::path>& dirs,
                                               ProfileRequest request,
                                               const std::filesystem::path& session_dir);

  // --- what the evaluation is measured on -----------------------------------------------------
  // Every worker's device, asked once: one model unless allow_mixed (bad input otherwise: a
  // run compares candidates measured on one model); notes() gets what differs between them.
  Expected<std::vector<DeviceInfo>> devices();
  const DeviceInfo* home_device();
  std::string arch();
  // The roofs the floor, %SOL and targets use (roofs.hpp): stored, measured now, or the spec's.
  DeviceRoofs roofs();
  // Content hash of everything that decides a measurement of `c` under `rigour`: the build
  // (source, params, arch, toolkit), the launch, the device, the dims, the timing options.
  Expected<std::string> key(const Candidate& c, const Rigour& rigour);
  // The problem as `c` sees it: the kernel's source replaced by the candidate's own.
  Problem problem_for(const Candidate& c) const;

  const CheckContext& home() const;
  std::size_t home_index() const;
  std::size_t workers() const { return m_ctxs.size(); }
  std::size_t live_workers() const { return m_dispatch.live(); }
  const CheckContext& worker(std::size_t w) const { return m_ctxs.at(w); }
  // "worker 1 (device 0 on node ...)" where the evaluation has several workers; "" with one.
  std::string worker_label(std::size_t w);
  // Workers lost so far, and what differs between the devices.
  std::vector<std::string> notes() const;
  const Problem& problem() const { return m_p; }
  const EvaluatorOptions& options() const { return m_o; }

 private:
  // Where checks keep the reference's outputs: references_root, else cache_root.
  const std::filesystem::path& references() const {
    return m_o.references_root.empty() ? m_o.cache_root : m_o.references_root;
  }
  BenchRequest request(const std::vector<Candidate>& cs, const Rigour& rigour) const;
  Expected<BenchReport> run_on(std::size_t worker, const std::vector<Candidate>& cs,
                               const Rigour& rigour, bool compare = false, bool baselines = false);
  CompileRequest compile_request_for(const Candidate& c);

  const Problem& m_p;
  std::vector<CheckContext> m_ctxs;
  EvaluatorOptions m_o;
  Dispatcher m_dispatch;
  std::optional<DeviceInfo> m_home_device;
  std::optional<std::vector<DeviceInfo>> m_devices;
  std::vector<std::string> m_device_notes;
  std::unique_ptr<BuildQueue> m_queue;  // builds announced ahead; none when builds need a worker
};

// Why `worker` is lost after a job none of whose candidates succeeded (a job with one ok
// proves its worker alive); nullopt when it is not lost.
std::optional<std::string> lost_after(const Expected<BenchReport>& b, WorkerClient& worker);

}  // namespace kopt::evaluate
