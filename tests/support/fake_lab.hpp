#pragma once
// A lab whose timings and profiles follow a known model (tests/unit/engine/optimizer_test.cpp
// explains it), and the toy problem it measures: the loop's decisions can be checked
// exactly, and reports rendered from a real run directory, without a GPU.
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/optimize/lab.hpp"

namespace kopt::test {
namespace fs = std::filesystem;
using optimize::ChampionCheck;
using optimize::Lab;
using optimize::Measured;
using optimize::TargetRecord;
using optimize::Variant;

inline const char* k_problem = R"TOML(name = "toy"
[dims]
n = 1024
[[tensors]]
name = "x"
dtype = "f32"
shape = ["n"]
role = "input"
[[tensors]]
name = "y"
dtype = "f32"
shape = ["n"]
role = "output"
[reference]
kind = "cuda"
source = "ref.cu"
entry = "ref"
args = ["x", "y"]
grid = [1]
block = [1]
[[kernels]]
name = "naive"
source = "naive.cu"
entry = "naive"
args = ["x", "y"]
grid = [1]
block = [1]
[[kernels]]
name = "tuned"
source = "tuned.cu"
entry = "tuned"
args = ["x", "y"]
grid = [1]
block = ["BLOCK"]
[kernels.params]
BLOCK = [256, 128, 512, 1024]
VEC = [4, 1, 2]
USE_SHFL = [1, 0]
[kernels.methods]
warp_shuffle_reduction = { on = "USE_SHFL=1", off = "USE_SHFL=0" }
vectorized_global_loads = { on = "VEC=4", off = "VEC=1" }
)TOML";

// Time model (us): naive 100; tuned 60, -15 with shuffles, -10 with VEC=4 (-5 with 2),
// +3/+2/+5 for BLOCK 128/512/1024.
class FakeLab : public Lab {
 public:
  std::map<std::string, int> measured;  // key -> times measured
  int measure_calls = 0;
  int crash_after = -1;             // throw on this measure call (a kill)
  std::set<int> environment_fails;  // measure calls (1-based) that fail in kopt's environment
  bool fail_tuned = false;
  bool near_peak = false;
  std::optional<double> target;
  std::set<std::string> not_landing;  // methods whose SASS signature is missing
  std::optional<double>
      ncu_time_factor;    // profiles carry ncu's duration: this times the variant's time
  bool searches = false;  // search_space answers (exhaustively, from the time model)
  std::vector<std::string> searched;  // the kernels search_space was asked for

  std::string device_name() override { return "Fake GPU"; }
  int sm() override { return 90; }
  Expected<std::string> evaluation_key(const Variant& v) override {
    return sha256_hex(v.label()).substr(0, 16);
  }
  double time_us(const Variant& v) const {
    if (!v.source.empty()) {  // an agent's branch says its own time: "// time=NN"
      auto text = read_text_file(v.source);
      auto at = text ? text->find("time=") : std::string::npos;
      if (at != std::string::npos) return std::stod(text->substr(at + 5));
    }
    if (v.kernel == "naive") return 100;
    const auto& p = v.point;
    double t = 60;
    if (p.at("USE_SHFL") == 1) t -= 15;
    t -= p.at("VEC") == 4 ? 10 : p.at("VEC") == 2 ? 5 : 0;
    t += p.at("BLOCK") == 128 ? 3 : p.at("BLOCK") == 512 ? 2 : p.at("BLOCK") == 1024 ? 5 : 0;
    return t;
  }
  std::optional<optimize::SpaceSearch> search_space(const std::string& kernel,
                                                    const std::map<std::string, std::int64_t>& held,
                                                    const ParamPoint& start,
                                                    std::size_t budget) override {
    (void)start, (void)budget;
    if (!searches || kernel != "tuned") return std::nullopt;
    searched.push_back(kernel);
    optimize::SpaceSearch s;
    s.strategy = "exhaustive";
    for (std::int64_t block : {256, 128, 512, 1024})
      for (std::int64_t vec : {4, 1, 2})
        for (std::int64_t shfl : {1, 0}) {
          ParamPoint p{{"BLOCK", block}, {"VEC", vec}, {"USE_SHFL", shfl}};
          bool fits = true;
          for (const auto& [k, v] : held) fits = fits && p.at(k) == v;
          if (!fits) continue;
          ++s.space_size;
          ++s.screened;
          double t = time_us(Variant{kernel, p, ""}) * 1e-6;
          if (!s.best || t < s.best_s) {
            s.best = p;
            s.best_s = t;
          }
        }
    s.confirmed = 1;
    return s;
  }
  Measured measure(const Variant& v) override {
    if (++measure_calls == crash_after) throw std::runtime_error("killed");
    if (environment_fails.contains(measure_calls)) {
      Measured m{VariantStatus::error, 0, 0, 0, "write failed: /full/disk/bench.json.tmp"};
      m.environment = true;
      return m;
    }
    ++measured[*evaluation_key(v)];
    if (fail_tuned && v.kernel == "tuned")
      return Measured{VariantStatus::compile_failed, 0, 0, 0, "ptxas: too many resources"};
    Measured m{VariantStatus::ok, time_us(v) * 1e-6, 0.002, 20, ""};
    if (!v.source.empty())  // an agent's branch may say its timing is flagged: "// flag=bimodal"
      if (auto text = read_text_file(v.source);
          text && text->find("flag=bimodal") != std::string::npos)
        m.flags = {"bimodal (two clusters: 50 % of the samples near 12 us and 50 % near 30 us)"};
    return m;
  }
  Expected<Comparison> compare(const Variant& a, const Variant& b) override {
    Comparison c;
    c.ratio = time_us(a) / time_us(b);
    c.ci_low = c.ratio * 0.995;
    c.ci_high = c.ratio * 1.005;
    c.verdict = c.ratio < 0.99 ? Verdict::faster : c.ratio > 1.01 ? Verdict::slower : Verdict::same;
    return c;
  }
  std::map<std::string, int> profiled;        // profile() calls by variant label
  std::vector<std::size_t> profile_sessions;  // profile_all() calls: how many variants each
  std::vector<Expected<Explanation>> profile_all(const std::vector<Variant>& vs,
                                                 const std::vector<fs::path>& dirs,
                                                 const fs::path& session_dir) override {
    profile_sessions.push_back(vs.size());
    return Lab::profile_all(vs, dirs, session_dir);
  }
  Expected<Explanation> profile(const Variant& v, const fs::path&) override {
    ++profiled[v.label()];
    bool shfl = v.kernel == "tuned" && v.point.at("USE_SHFL") == 1;
    bool vec = v.kernel == "tuned" && v.point.at("VEC") == 4;
    Explanation e;
    e.metrics = {
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", near_peak ? 90 : 20},
        {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 10},
        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", vec ? 88 : 30},
        {"dram__throughput.avg.pct_of_peak_sustained_elapsed", near_peak ? 92
                                                               : vec     ? 88
                                                                         : 30},
        {"smsp__average_warps_active_per_issue_active.ratio", 10},
        {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", near_peak ? 0.5
                                                                             : shfl    ? 0.5
                                                                                       : 4.5},
        {"launch__waves_per_multiprocessor", 8}};
    e.gaps = roofline_gaps(e.metrics);
    e.bottleneck = classify_bottleneck(e.metrics);
    if (ncu_time_factor) {  // ncu's duration, this many times the variant's own time
      e.time_s = *ncu_time_factor * time_us(v) * 1e-6;
      e.time_source = "ncu gpu__time_duration.sum";
    }
    return e;
  }
  // An agent's branch has what it claims (unless not landing); the problem's kernels have the
  // methods their toggles turn on at the point: USE_SHFL=1, VEC=4.
  std::map<std::string, SassVerdictKind> verify(const Variant& v,
                                                const std::vector<std::string>& methods) override {
    std::map<std::string, SassVerdictKind> out;
    for (const auto& m : methods) {
      bool on =
          !v.source.empty() ||
          (v.kernel == "tuned" && ((m == "warp_shuffle_reduction" && v.point.at("USE_SHFL") == 1) ||
                                   (m == "vectorized_global_loads" && v.point.at("VEC") == 4)));
      out[m] =
          on && !not_landing.contains(m) ? SassVerdictKind::verified : SassVerdictKind::missing;
    }
    return out;
  }
  std::optional<double> target_time() override { return target; }
  std::optional<TargetRecord> target_record() override {
    return TargetRecord{
        {{"bound", "memory"},
         {"bytes", 9.0e7},
         {"flops", 2.25e7},
         {"target_s", 33e-6},
         {"memory_roof",
          {{"name", "dram"}, {"rate", 3e12}, {"origin", "measured"}, {"source", "fake copy"}}},
         {"compute_roof",
          {{"name", "fp32"}, {"rate", 60e12}, {"origin", "spec"}, {"source", "fake sheet"}}}},
        "# Target: toy\n"};
  }
  std::optional<Measured> measure_reference() override {
    return Measured{VariantStatus::ok, 50e-6, 0.003, 20, "", "SM 1980/1980 MHz"};
  }
  std::string source_text(const Variant& v) override { return "// " + v.kernel + "\n"; }
  // An agent's branch may say what the champion check finds in it: "// seed1only" (answers
  // carried for seed 1: wrong on a secret seed), "// race" (a racecheck hazard) or
  // "// nosanitizer" (the tool is missing); others are right and clean. The tools run only
  // while `sanitizing`.
  bool sanitizing = false;
  std::vector<std::string> sanitized;  // labels of the variants run under the tools
  ChampionCheck check_champion(const Variant& v) override {
    std::optional<std::string> text;
    if (!v.source.empty())
      if (auto t = read_text_file(v.source)) text = *t;
    ChampionCheck out;
    if (text && text->find("seed1only") != std::string::npos) {
      out.wrong = "wrong on the secret seed 4611686018427387905";
      return out;
    }
    if (!sanitizing) return out;
    sanitized.push_back(v.label());
    out.sanitizer.resize(2);
    out.sanitizer[0].tool = "memcheck";
    out.sanitizer[1].tool = "racecheck";
    for (auto& o : out.sanitizer) o.status = SanitizerStatus::clean;
    if (text && text->find("nosanitizer") != std::string::npos)
      for (auto& o : out.sanitizer)
        o = SanitizerOutcome{
            o.tool, SanitizerStatus::unverifiable, {}, "compute-sanitizer not found", ""};
    if (text && text->find("race") != std::string::npos) {
      out.sanitizer[1].status = SanitizerStatus::findings;
      out.sanitizer[1].findings.push_back(SanitizerFinding{
          "racecheck", "Race reported between Write access at k+0x90 in tuned.cu:7", "k",
          "tuned.cu:7", "and Read access at k+0xd0 in tuned.cu:9 [992 hazards]", 1});
    }
    return out;
  }
  nlohmann::json environment() override { return {{"device", "Fake GPU"}}; }
};

}  // namespace kopt::test
