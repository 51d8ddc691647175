#include "kopt/tune/tune_stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace kopt::tune {
using nlohmann::json;

StageTimes& StageTimes::operator+=(const StageTimes& o) {
  build_s += o.build_s;
  check_s += o.check_s;
  measure_s += o.measure_s;
  other_s += o.other_s;
  return *this;
}

std::vector<std::size_t> select_for_confirmation(const std::vector<Evaluation>& screened,
                                                 const ConfirmRule& rule) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < screened.size(); ++i)
    if (screened[i].ok && screened[i].cost > 0) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
    return screened[a].cost < screened[b].cost;
  });
  if (ok.empty()) return ok;
  if (rule.max == 0) return ok;
  const Evaluation& leader = screened[ok.front()];
  // The leader's upper bound: its interval where the lab gave one, else its median.
  const double reach = leader.cost_high > 0 ? leader.cost_high : leader.cost;
  std::vector<std::size_t> chosen;
  for (std::size_t rank = 0; rank < ok.size() && chosen.size() < rule.max; ++rank) {
    const Evaluation& e = screened[ok[rank]];
    const double low = e.cost_high > 0 ? e.cost_low : e.cost;
    if (rank < std::max<std::size_t>(1, rule.top) || low <= reach) chosen.push_back(ok[rank]);
  }
  return chosen;
}

TwoStageResult run_two_stage(const SearchSpace& space, TuneLab& lab, const SearchOptions& search,
                             const ConfirmRule& rule) {
  auto t0 = std::chrono::steady_clock::now();
  TwoStageResult out;
  BatchObjective screen = [&](const std::vector<ParamPoint>& points) {
    return lab.screen(points, out.screening);
  };
  SearchOptions options = search;
  options.prefetch = [&](const std::vector<ParamPoint>& next) { lab.prefetch(next); };
  out.search = run_search(space, screen, options);

  std::vector<ParamPoint> chosen;
  std::vector<double> screened_s;
  for (std::size_t i : select_for_confirmation(out.search.history, rule)) {
    chosen.push_back(out.search.history[i].point);
    screened_s.push_back(out.search.history[i].cost);
  }
  if (!chosen.empty()) out.confirmed = lab.confirm(chosen, out.confirmation);
  for (std::size_t i = 0; i < out.confirmed.size() && i < screened_s.size(); ++i) {
    Confirmed& c = out.confirmed[i];
    c.screened_s = screened_s[i];
    if (c.ok && c.summary.median > 0 &&
        (!out.champion || c.summary.median < out.champion->summary.median))
      out.champion = c;
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::optional<std::string> reorder_note(const std::vector<Confirmed>& confirmed) {
  std::vector<const Confirmed*> ok;
  for (const auto& c : confirmed)
    if (c.ok && c.summary.median > 0 && c.screened_s > 0) ok.push_back(&c);
  if (ok.size() < 2) return std::nullopt;
  auto by_screening = ok, by_full = ok;
  std::stable_sort(by_screening.begin(), by_screening.end(),
                   [](auto* a, auto* b) { return a->screened_s < b->screened_s; });
  std::stable_sort(by_full.begin(), by_full.end(),
                   [](auto* a, auto* b) { return a->summary.median < b->summary.median; });
  if (by_screening == by_full) return std::nullopt;
  bool reversed = std::equal(by_screening.begin(), by_screening.end(), by_full.rbegin());
  std::size_t leader_rank =
      std::find(by_screening.begin(), by_screening.end(), by_full.front()) - by_screening.begin();
  return fmt::format(
      "the full measurement ranks these {} {}{}: a screening median is a "
      "short fixed sample that only chooses what to confirm, and candidates whose screening "
      "intervals overlap can swap places; the confirmed times decide",
      ok.size(),
      reversed ? "in the reverse of their screening order"
               : "in another order than their screening",
      leader_rank > 0 ? fmt::format(" (the champion was screened #{})", leader_rank + 1)
                      : std::string());
}

json to_json(const StageTimes& t) {
  return {{"build_s", t.build_s},
          {"check_s", t.check_s},
          {"measure_s", t.measure_s},
          {"other_s", t.other_s}};
}

json to_json(const Confirmed& c) {
  return {{"point", c.point},
          {"screened_s", c.screened_s},
          {"ok", c.ok},
          {"failure", c.failure},
          {"summary", c.ok ? to_json(c.summary) : json(nullptr)}};
}

}  // namespace kopt::tune
