#pragma once
// Screen, then confirm: how `kopt tune` gets through a space fast without reporting a number
// that was not measured in full.
//
// 1. Screening. The search evaluates candidates in batches: each batch is built on a pool of
//    threads, checked against the reference in one pass, and timed side by side with a short
//    fixed sample budget (same L2 flush and verified samples as a full measurement). A
//    screening median ranks candidates; it is never a result.
// 2. Confirmation. The leader by screening median, the next `top - 1`, and every candidate
//    whose screening interval (the 95 % interval of its median) reaches down to the leader's
//    upper bound are measured again with the full adaptive measurement, side by side in one
//    job (interleaved rounds, so a drift of clocks hits them alike), at most `max` of them.
// 3. The champion is the fastest confirmed candidate, with its confirmed numbers.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/measure/statistics.hpp"
#include "kopt/tune/search.hpp"

namespace kopt::tune {

// Where the time of a batch went (seconds of wall time, the batch's own clock).
struct StageTimes {
  double build_s = 0;    // building the candidates (in parallel)
  double check_s = 0;    // running them against the reference
  double measure_s = 0;  // timing them
  double other_s = 0;    // the rest: inputs, roofs, kopt itself
  StageTimes& operator+=(const StageTimes& o);
  double total() const { return build_s + check_s + measure_s + other_s; }
};

// One confirmed candidate: its full measurement beside its screening.
struct Confirmed {
  ParamPoint point;
  double screened_s = 0;  // its screening median
  bool ok = false;
  std::string failure;
  Summary summary;  // the full measurement
};

// What measures candidates: the GPU through kopt bench, or a fake in tests.
class TuneLab {
 public:
  virtual ~TuneLab() = default;
  // Builds, checks and screens a batch: one Evaluation per point (cost: the screening median;
  // cost_low / cost_high: its interval). Adds its wall time to `times`.
  virtual std::vector<Evaluation> screen(const std::vector<ParamPoint>& points,
                                         StageTimes& times) = 0;
  // The full measurement of a few candidates side by side, in the order given.
  virtual std::vector<Confirmed> confirm(const std::vector<ParamPoint>& points,
                                         StageTimes& times) = 0;
  // The batch after the one being screened: a lab may start building it now.
  virtual void prefetch(const std::vector<ParamPoint>& /*points*/) {}
};

struct ConfirmRule {
  std::size_t top = 3;  // the leader and the next top - 1 by screening median
  std::size_t max = 8;  // no more than this many (0: every candidate that screened ok)
};

// The indices (into `screened`, ok ones only) to confirm, fastest screening first.
std::vector<std::size_t> select_for_confirmation(const std::vector<Evaluation>& screened,
                                                 const ConfirmRule& rule);

struct TwoStageResult {
  SearchResult search;  // the screening: every candidate the strategy tried
  std::vector<Confirmed> confirmed;
  std::optional<Confirmed> champion;  // the fastest confirmed; none when nothing screened ok
  StageTimes screening, confirmation;
  double wall_s = 0;
};

TwoStageResult run_two_stage(const SearchSpace& space, TuneLab& lab, const SearchOptions& search,
                             const ConfirmRule& rule);

// When the full measurement ranks the confirmed candidates otherwise than their screening
// medians did, a sentence saying so and why that is expected (screening is short and only
// chooses what to confirm; the confirmed times decide); nullopt when the orders agree.
std::optional<std::string> reorder_note(const std::vector<Confirmed>& confirmed);

nlohmann::json to_json(const StageTimes& t);
nlohmann::json to_json(const Confirmed& c);

}  // namespace kopt::tune
