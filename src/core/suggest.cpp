#include "kopt/core/suggest.hpp"

#include <algorithm>
#include <limits>

namespace kopt {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus the swap of two neighbours (shpae -> shape).
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> closest_name(std::string_view word,
                                        const std::vector<std::string>& known) {
  if (word.empty()) return std::nullopt;
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& k : known) {
    if (k == word) continue;
    std::size_t d = edit_distance(word, k);
    if (d <= allowed && d < best_d) {
      best = k;
      best_d = d;
    }
  }
  if (best) return best;
  // A prefix of exactly one name ("--max" for "--max-time" is two: no guess).
  std::optional<std::string> prefixed;
  for (const auto& k : known)
    if (word.size() >= 3 && k.size() > word.size() && k.compare(0, word.size(), word) == 0) {
      if (prefixed) return std::nullopt;
      prefixed = k;
    }
  return prefixed;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& known) {
  auto c = closest_name(word, known);
  return c ? " (did you mean '" + *c + "'?)" : "";
}

}  // namespace kopt
