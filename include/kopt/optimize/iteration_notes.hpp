#pragma once
// The notes an iteration leaves in its version directory for people and agents to read.
#include <filesystem>
#include <string>
#include <vector>

#include "kopt/store/run_state.hpp"

namespace kopt::optimize {

// hypothesis.md at close: each branch's own hypothesis and its predictions with what the
// metrics did, above kopt's analysis from the open (kept as it was written).
void write_branch_hypotheses(const std::filesystem::path& file,
                             const std::vector<BranchRecord>& branches,
                             const std::vector<Prediction>& judged, const std::string& candidate);

}  // namespace kopt::optimize
