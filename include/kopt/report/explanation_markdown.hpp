#pragma once
// Markdown for an explained kernel (summary.md, details.md) and for the spec table.
#include <string>
#include <vector>

#include "kopt/analysis/advice.hpp"
#include "kopt/analysis/explanation.hpp"
#include "kopt/core/units.hpp"

namespace kopt {

// Where the numbers came from, printed at the top of summary.md.
struct ProfileProvenance {
  std::string problem;  // "softmax" (empty for `kopt analyze FILE`)
  std::string variant;  // "tuned BLOCK=256"
  std::string device;
  std::string ncu_version;
  std::string collection;  // "questions sol,memory,..." or "--set full"
  std::string command;     // the ncu command line
  std::string csv_file, report_file;
};

std::string summary_markdown(const Explanation& e, const ProfileProvenance& p);
std::string details_markdown(const Explanation& e, const ProfileProvenance& p);
std::string spec_markdown(const GpuSpec& s);
// "What next": headroom, budget (both formulas), ranked suggestions or a reasoned stop.
std::string advice_markdown(const Advice& a);
std::string spec_table_markdown(const std::vector<GpuSpec>& specs);

}  // namespace kopt
