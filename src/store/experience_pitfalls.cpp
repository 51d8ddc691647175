// The experience DB's pitfalls: the attempts that did not pay, by method and cause, for the
// next run that meets the same situation.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kopt/store/experience_db.hpp"

namespace kopt {

std::string Pitfall::line() const {
  return fmt::format(
      "{}: {}, {} time{}{}{} (last: {}{})", method, cause, times, times == 1 ? "" : "s",
      worst_speedup < 1 ? fmt::format(", at worst {:.2f}x", worst_speedup) : "",
      successes ? fmt::format("; it paid {} time{} here", successes, successes == 1 ? "" : "s")
                : "",
      last_run, last_note.empty() ? "" : ", " + last_note);
}

Expected<std::vector<Pitfall>> ExperienceDb::pitfalls(const std::string& family,
                                                      const std::string& chip,
                                                      const std::string& bottleneck) const {
  ExperienceFilter f;
  f.family = family;
  f.chip = chip;
  f.bottleneck = bottleneck;
  f.limit = 100000;
  auto records = list(f);  // newest first
  if (!records) return Unexpected(records.error());
  std::map<std::pair<std::string, PitfallCause>, Pitfall> by;
  std::map<std::string, std::size_t> paid;
  for (const auto& r : *records) {
    if (r.cause == PitfallCause::none) {
      paid[r.method] += r.verdict == ExperienceVerdict::success;
      continue;
    }
    Pitfall& p = by[{r.method, r.cause}];
    if (p.times++ == 0) {
      p.method = r.method;
      p.cause = r.cause;
      p.worst_speedup = r.speedup;
      p.last_run = r.run_id;
      p.last_note = r.note;
    }
    p.worst_speedup = std::min(p.worst_speedup, r.speedup);
  }
  std::vector<Pitfall> out;
  for (auto& [key, p] : by) {
    p.successes = paid[p.method];
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const Pitfall& a, const Pitfall& b) {
    auto weight = [](const Pitfall& p) {
      return static_cast<long>(p.times) - static_cast<long>(p.successes);
    };
    return weight(a) > weight(b);
  });
  return out;
}

}  // namespace kopt
