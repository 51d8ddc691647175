#pragma once
// A campaign's answer to "where do we stand" (campaign.hpp), made from its records alone: a row
// per problem and shape with its status, the best candidate that passed, its time, its speedup
// over torch eager and over torch.compile, its % of the speed of light and the bound, and what
// stopped it; KernelBench's fast_p at p = 0, 1, 1.5, 2 over eager and over compile; the geometric
// mean of the speedups; the failures grouped by cause. Written as leaderboard.md, .html, .json.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/campaign/campaign.hpp"

namespace kopt::campaign {

// What a row says. `faster` / `slower`: a candidate passed and was timed, against torch eager
// (`passed`: no eager time to compare with); `failed`: every candidate failed (the causes say
// how); `baseline`: the problem has no candidate, only its reference and PyTorch baselines;
// `refused`, `environment`, `budget`: a step was refused, failed by the machine, or killed at
// the budget before any candidate was timed; `pending`: not run yet.
enum class RowStatus {
  faster,
  slower,
  passed,
  failed,
  baseline,
  refused,
  environment,
  budget,
  pending
};

}  // namespace kopt::campaign

namespace kopt {
template <>
struct EnumNames<campaign::RowStatus> {
  static constexpr std::array<std::pair<campaign::RowStatus, std::string_view>, 9> table{{
      {campaign::RowStatus::faster, "faster"},
      {campaign::RowStatus::slower, "slower"},
      {campaign::RowStatus::passed, "passed"},
      {campaign::RowStatus::failed, "failed"},
      {campaign::RowStatus::baseline, "baseline"},
      {campaign::RowStatus::refused, "refused"},
      {campaign::RowStatus::environment, "environment"},
      {campaign::RowStatus::budget, "budget"},
      {campaign::RowStatus::pending, "pending"},
  }};
};
}  // namespace kopt

namespace kopt::campaign {

struct LeaderboardRow {
  std::string problem, shape;
  RowStatus status = RowStatus::pending;
  std::string best;       // "vec BLOCK=256 VEC=4": the fastest candidate that passed
  std::string best_from;  // the step that timed it: bench, tune or optimize
  std::optional<double> time_s, eager_s, compile_s, speedup_eager, speedup_compile, pct_sol;
  std::string bound;    // memory or compute (the roof the floor is set by), or why unknown
  std::string stopped;  // what ended the problem's work: the plan done, a budget, a refusal
  std::vector<std::string> causes;  // each failed candidate: "vec: mismatch"
  // Why a number is missing where it is (no eager time, no cost formula): shown in the table.
  std::vector<std::string> notes;
  bool correct() const { return time_s.has_value(); }
};

struct FastP {
  double p = 0;
  double over_eager = 0, over_compile = 0;  // fractions of every row
};

struct Leaderboard {
  std::vector<LeaderboardRow> rows;
  std::vector<FastP> fast_p;  // p = 0, 1, 1.5, 2
  std::optional<double> geomean_eager, geomean_compile;
  std::size_t n_eager = 0, n_compile = 0;                    // rows in each geometric mean
  std::map<std::string, std::vector<std::string>> failures;  // cause -> "problem (kernel)"
  std::string plan;
  double budget_s = 0;
};

// From the campaign's state and the records under `out`.
Leaderboard make_leaderboard(const CampaignState& state, const std::filesystem::path& out);

std::string leaderboard_markdown(const Leaderboard& b);
std::string leaderboard_html(const Leaderboard& b);
nlohmann::json to_json(const Leaderboard& b);
Expected<void> write_leaderboard_files(const Leaderboard& b, const std::filesystem::path& out);

}  // namespace kopt::campaign
