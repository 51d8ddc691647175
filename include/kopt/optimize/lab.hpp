#pragma once
// What the optimization loop asks of the machine: measure a variant (build, check, time),
// compare two interleaved, profile one, verify methods in its SASS. The loop's decisions
// live in the optimizer and are tested with a fake lab; the real one (optimize/gpu_lab) goes
// through the evaluator.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/explanation.hpp"
#include "kopt/analysis/method_catalog.hpp"
#include "kopt/measure/compare.hpp"
#include "kopt/measure/statistics.hpp"
#include "kopt/measure/variant_status.hpp"
#include "kopt/problem/param_space.hpp"
#include "kopt/tools/sanitizer.hpp"

namespace kopt::optimize {

struct Variant {
  std::string kernel;
  ParamPoint point;
  std::string
      source;  // a file that replaces the kernel's source (an agent's branch); empty: the problem's
  std::string label() const;  // "tuned BLOCK=256 VEC=4", "+ [branches/a1/kernel.cu]" with a source
  bool operator==(const Variant&) const = default;
};

struct Measured {
  VariantStatus status = VariantStatus::ok;
  double median_s = 0;
  double noise = 0;
  std::size_t samples = 0;
  std::string error;
  std::string clocks;  // after the measurement
  // Distribution flags of the samples ("bimodal (...)", distribution_flags.hpp): the status
  // stays ok, but a flagged variant is never accepted as a champion.
  std::vector<std::string> flags;
  std::string
      device;  // which device measured it, where a lab has several workers ("worker 1: ...")
  // The measurement failed in kopt's environment (a lost worker, a full disk, kopt's own
  // out-of-memory, a missing tool), not in the kernel: it is no verdict on the kernel, never
  // recorded as one, and a resume measures it again.
  bool environment = false;
  bool ok() const { return status == VariantStatus::ok; }
};

// What Lab::check_champion found.
struct ChampionCheck {
  std::optional<std::string> wrong;         // why the candidate is wrong on a seed; nullopt: right
  std::vector<SanitizerOutcome> sanitizer;  // empty: not sanitized (turned off, or it was wrong)
};

// What Lab::search_space found: the best confirmed point of a kernel's space.
struct SpaceSearch {
  std::optional<ParamPoint> best;  // none when every point failed
  double best_s = 0;               // its confirmed median
  std::uint64_t space_size = 0;
  std::size_t screened = 0, confirmed = 0;
  std::string strategy;  // exhaustive, or local (a neighbourhood of the start) for a large space
  std::string note;      // why there is no best, or what failed
  double wall_s = 0;
};

// What a run is aiming at, recorded when it starts: target.json and target.md.
struct TargetRecord {
  nlohmann::json json;  // kopt target --json
  std::string markdown;
};

class Lab {
 public:
  virtual ~Lab() = default;
  virtual std::string device_name() = 0;
  virtual int sm() = 0;  // 90 for sm_90
  // What the experience DB files this device's outcomes under (DeviceInfo::chip: "sm_90",
  // or an OpenCL device's name), and its backend ("cuda", "opencl").
  virtual std::string chip() { return "sm_" + std::to_string(sm()); }
  virtual std::string backend() { return "cuda"; }
  // Content hash of everything that decides a measurement: source, params, arch, toolkit,
  // dims, timing mode. Equal keys are the same measurement.
  virtual Expected<std::string> evaluation_key(const Variant& v) = 0;
  virtual Measured measure(const Variant& v) = 0;
  // Several variants, each measured as measure() does; a lab with several workers (--gpus,
  // --cluster) measures them at once, one per worker. Each result is on one device; the
  // decisions that compare candidates (compare()) stay on one device.
  // `each` is called as each one is done (never two at once), so that what was measured is
  // recorded before the next finishes: a run killed in the middle keeps it.
  using MeasuredFn = std::function<void(std::size_t index, const Measured&)>;
  virtual std::vector<Measured> measure_all(const std::vector<Variant>& vs,
                                            const MeasuredFn& each = {}) {
    std::vector<Measured> out;
    for (const auto& v : vs) {
      out.push_back(measure(v));
      if (each) each(out.size() - 1, out.back());
    }
    return out;
  }
  // A vs B measured interleaved; the verdict is A's (faster: A takes less time).
  virtual Expected<Comparison> compare(const Variant& a, const Variant& b) = 0;
  // ncu's view, the files written under `dir`; nullopt (with a reason) when it cannot profile.
  virtual Expected<Explanation> profile(const Variant& v, const std::filesystem::path& dir) = 0;
  // Several variants, each profiled as profile() does (its files under dirs[i]); a lab with
  // ncu profiles them in one session, whose report and log go to `session_dir` (the branches
  // of one round: one start-up of ncu, not one each). One result per variant, in order.
  virtual std::vector<Expected<Explanation>> profile_all(
      const std::vector<Variant>& vs, const std::vector<std::filesystem::path>& dirs,
      const std::filesystem::path& session_dir) {
    (void)session_dir;
    std::vector<Expected<Explanation>> out;
    for (std::size_t i = 0; i < vs.size(); ++i) out.push_back(profile(vs[i], dirs.at(i)));
    return out;
  }
  // A kernel's space searched with tune's screen-then-confirm (tune/tune_stages.hpp), the
  // params of `held` fixed: all of it when it has at most `budget` points, else a neighbourhood
  // of `start` with that many evaluations. nullopt: this lab cannot (the default: a fake).
  virtual std::optional<SpaceSearch> search_space(const std::string& kernel,
                                                  const std::map<std::string, std::int64_t>& held,
                                                  const ParamPoint& start, std::size_t budget) {
    (void)kernel, (void)held, (void)start, (void)budget;
    return std::nullopt;
  }
  virtual std::map<std::string, SassVerdictKind> verify(
      const Variant& v, const std::vector<std::string>& methods) = 0;
  // The time that meets the target (90 % of the relevant roof); nullopt when no roof is known.
  virtual std::optional<double> target_time() = 0;
  virtual std::optional<TargetRecord> target_record() = 0;
  // The reference implementation timed like a candidate; nullopt when it cannot be (a C++
  // reference runs on the CPU).
  virtual std::optional<Measured> measure_reference() = 0;
  // The PyTorch baselines of a ref.py (torch eager, torch.compile), timed like candidates;
  // none for other references.
  virtual std::vector<std::pair<std::string, Measured>> measure_baselines() { return {}; }
  virtual std::string source_text(const Variant& v) = 0;
  // A candidate about to become champion, checked once more: on seed 1 and a secret seed
  // (drawn at run time, engine/checker.hpp; measurements check seed 1 only, which a kernel
  // could carry answers for), then, when it is right, under compute-sanitizer's memcheck and
  // racecheck (engine/sanitize.hpp). The default checks nothing (a fake).
  virtual ChampionCheck check_champion(const Variant&) { return {}; }
  // What the run ran on (device, clocks, driver, toolkit, tools): env.json.
  virtual nlohmann::json environment() = 0;
};

}  // namespace kopt::optimize
