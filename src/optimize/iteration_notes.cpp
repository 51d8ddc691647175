#include "kopt/optimize/iteration_notes.hpp"

#include <fmt/format.h>

#include "kopt/core/fs.hpp"

namespace kopt::optimize {

void write_branch_hypotheses(const std::filesystem::path& file,
                             const std::vector<BranchRecord>& branches,
                             const std::vector<Prediction>& judged, const std::string& candidate) {
  std::string open = read_text_file(file).value_or("");
  const std::string marker = "\n---\n\n";
  if (auto at = open.find(marker);
      at != std::string::npos && open.starts_with("# The branches' hypotheses"))
    open = open.substr(at + marker.size());  // written before by an earlier close of this iteration
  std::string out =
      "# The branches' hypotheses\n\nWritten by the branches' authors before measurement; the "
      "predictions "
      "are judged against the champion's profile at the open and the candidate's.\n";
  for (const auto& b : branches) {
    out += fmt::format("\n## {}{}{}\n\n", b.id,
                       b.id == candidate ? " (the candidate: the fastest branch)" : "",
                       b.ablates.empty() ? "" : " (ablates " + b.ablates + ")");
    out += b.hypothesis.empty() ? "No hypothesis given.\n" : b.hypothesis + "\n";
    for (const auto& p : judged)
      if (p.branch == b.id) out += "- " + prediction_line(p) + "\n";
  }
  (void)write_text_atomic(file, out + marker + open);
}

}  // namespace kopt::optimize
