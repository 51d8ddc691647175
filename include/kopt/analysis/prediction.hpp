#pragma once
// Predictions an agent makes before a branch is measured (`--expect METRIC:up|down[:AMOUNT]`),
// judged against what the metric did: the open's profile of the champion before, the
// candidate's profile (or its median, for `time`) after.
//   METRIC  `time` (kopt's median), an alias (prediction_aliases), a kopt-derived metric
//           (kopt__stall_share_long_scoreboard, kopt__memory_roof_pct, ...) or any ncu metric
//           of the profile;
//   AMOUNT  `10%` (relative to before) or a number in the metric's unit; without it any move
//           the predicted way beyond 1 % counts.
// Verdicts: confirmed (moved that way, by the amount), short (that way, less than the amount),
// refuted (the other way, or less than 1 %), unmeasured (no value before or after: why).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kopt/core/enum_names.hpp"
#include "kopt/core/error.hpp"
#include "kopt/tools/ncu_csv.hpp"

namespace kopt {

// How a prediction fared against what the metric did.
enum class PredictionVerdict {
  not_judged,  // not yet: the iteration is open
  confirmed,   // moved as predicted, by the amount predicted
  fell_short,  // moved the right way, by less than predicted
  refuted,     // did not move (within 1 %), or moved the other way
  unmeasured,  // no measurement to judge it by (the branch failed, no profile)
};

template <>
struct EnumNames<PredictionVerdict> {
  static constexpr std::array<std::pair<PredictionVerdict, std::string_view>, 5> table{{
      {PredictionVerdict::not_judged, ""},
      {PredictionVerdict::confirmed, "confirmed"},
      {PredictionVerdict::fell_short, "short"},
      {PredictionVerdict::refuted, "refuted"},
      {PredictionVerdict::unmeasured, "unmeasured"},
  }};
};

struct Prediction {
  std::string branch;     // the branch that made it ("a1"); "" for a proposer's or kopt's own
  std::string text;       // as given: "dram_throughput:up:10%"
  std::string metric;     // resolved: the full metric name, or "kopt__time_s" for time
  std::string direction;  // up | down
  std::optional<double> amount;
  bool relative = false;  // amount is a fraction of before
  // Filled when judged:
  std::optional<double> before, after;
  PredictionVerdict verdict = PredictionVerdict::not_judged;
  std::string note;
};

// alias -> full metric name
const std::vector<std::pair<std::string, std::string>>& prediction_aliases();
inline constexpr const char* k_time_metric = "kopt__time_s";

// `field` names the flag or JSON field in the message ("--expect", "branches.json[2].expect").
Expected<Prediction> parse_prediction(const std::string& text,
                                      const std::string& field = "--expect");
// The metric must be `time`, an alias or a metric of `known` (the open's profile); nullopt when
// fine.
std::optional<std::string> unknown_metric(const Prediction& p, const MetricValues& known);

void judge_prediction(Prediction& p, const MetricValues& before, const MetricValues& after);
// Not judged, with the reason (the candidate was not profiled, the branch was not the fastest).
void leave_unjudged(Prediction& p, const std::string& why);

// One line: "`dram_throughput:up:10%` — confirmed: 61.2 -> 84 (+37.3 %)".
std::string prediction_line(const Prediction& p);

void to_json(nlohmann::json& j, const Prediction& p);
void from_json(const nlohmann::json& j, Prediction& p);

}  // namespace kopt
