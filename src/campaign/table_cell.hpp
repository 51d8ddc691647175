#pragma once
// A markdown table cell of the campaign's tables (the KernelBench batch's, the leaderboard):
// no '|' and no newline, and at most `max` characters.
#include <string>

namespace kopt::campaign {

inline std::string table_cell(std::string s, std::size_t max) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = c == '|' ? '/' : ' ';
  return s.size() > max ? s.substr(0, max - 3) + "..." : s;
}

}  // namespace kopt::campaign
