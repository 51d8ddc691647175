#pragma once
// What a report shows, read from a run directory alone (no GPU): the state, each version's
// hypothesis and records, the target with its roofs, the reference timing. Anything missing
// or damaged becomes a line in `gaps`, never a failure.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kopt/store/run_state.hpp"

namespace kopt {

struct VersionView {
  VersionRecord record;
  std::map<std::string, std::string> sass;  // method -> verdict (vN/sass.json)
  std::string hypothesis;                   // the Hypothesis paragraph of vN/hypothesis.md
};

struct RoofUse {
  std::string name, origin, source;  // from target.json: which roof, measured or spec, where from
  double rate = 0;                   // FLOP/s or byte/s
  std::string unit;                  // "FLOP/s" or "B/s"
};

struct RunReport {
  std::filesystem::path dir;
  std::optional<RunState> state;
  std::vector<VersionView> versions;
  std::vector<std::string> gaps;  // what the records do not hold, in words
  // Derived from the records:
  const VersionRecord* baseline = nullptr;
  const VersionRecord* best = nullptr;  // the champion
  std::optional<double> flops, bytes;   // the cost formulas (target.json)
  std::string bound;                    // memory | compute
  std::optional<RoofUse> roof;          // the ceiling the bound names
  std::optional<RoofUse> compute_roof, memory_roof;

  std::optional<double> speedup() const;
  // The share of `roof` the version reaches: its FLOP/s or byte/s over the roof's rate.
  std::optional<double> pct_of_roof(const VersionRecord& v) const;
  std::string title() const;  // the problem, or the directory
};

RunReport load_run_report(const std::filesystem::path& run_dir);

std::string report_markdown(const RunReport& r);
std::string benchmark_markdown(const RunReport& r);
std::string report_html(const RunReport& r);
std::string leaderboard_markdown(const std::vector<RunReport>& runs);
std::string leaderboard_html(const std::vector<RunReport>& runs);

}  // namespace kopt
