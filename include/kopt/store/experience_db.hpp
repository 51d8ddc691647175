#pragma once
// The experience database (SQLite): every method outcome of every run, so the next
// optimization starts from what worked — across kernels, GPUs and people. Failed
// experiments are first-class records. Safe for several writers at once (WAL journal,
// busy timeout, one transaction per write); a write either lands whole or not at all.
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kopt/analysis/prediction.hpp"
#include "kopt/core/enum_names.hpp"
#include "kopt/core/error.hpp"
#include "kopt/problem/param_space.hpp"

namespace kopt {

// 1: the first schema; 2: adds `origin` (run, manual, import) to every record; 3: adds the
// `predictions` table (a new table: older files gain it on open); 4: adds `cause` (a pitfall's).
inline constexpr int k_experience_schema_version = 4;

// What a method did to a kernel's time, as the experience DB records it.
enum class ExperienceVerdict { success, neutral, failure, regression };

template <>
struct EnumNames<ExperienceVerdict> {
  static constexpr std::array<std::pair<ExperienceVerdict, std::string_view>, 4> table{{
      {ExperienceVerdict::success, "success"},
      {ExperienceVerdict::neutral, "neutral"},
      {ExperienceVerdict::failure, "failure"},
      {ExperienceVerdict::regression, "regression"},
  }};
};

// Why an attempt at a method did not pay: what makes its record a pitfall, shown when the next
// run meets the same situation (family, chip, bottleneck).
enum class PitfallCause {
  none,            // it paid (or nobody said why not)
  no_sass_change,  // the method's instructions are not in the machine code
  slower,          // it landed and cost time
  no_gain,         // it landed and gained nothing past the noise
  incorrect,       // the branches that turned it on computed wrong results
  does_not_build,  // they did not compile
  crashed,         // they crashed or hung
};

template <>
struct EnumNames<PitfallCause> {
  static constexpr std::array<std::pair<PitfallCause, std::string_view>, 7> table{{
      {PitfallCause::none, ""},
      {PitfallCause::no_sass_change, "no SASS change"},
      {PitfallCause::slower, "slower"},
      {PitfallCause::no_gain, "no gain"},
      {PitfallCause::incorrect, "incorrect"},
      {PitfallCause::does_not_build, "does not build"},
      {PitfallCause::crashed, "crashed"},
  }};
};

struct ExperienceRecord {
  std::int64_t id = 0;
  std::string family;  // the problem's family: softmax, gemm, elementwise, ...
  std::string backend = "cuda";
  std::string chip;        // sm_90, gfx942, ...
  std::string bottleneck;  // the class when the method was tried
  std::string method;
  ParamPoint params;
  // The kernel's time before the method was applied and after (the loop: the champion when
  // the iteration began, and the version that applied it), and their ratio: the run's gain.
  double time_before_s = 0, time_after_s = 0;
  double speedup = 1;  // before / after
  // success above +5 %, neutral +2 to +5 %, failure within ±2 %, regression slower than 2 %;
  // the loop judges by the method's own factor where it was ablated (own_factor()); nullopt:
  // derived from the speedup when the record is added.
  std::optional<ExperienceVerdict> verdict;
  std::string sass_verdict;   // verified | missing | ...
  double attribution_ms = 0;  // the time the method saved, leave-one-out (0: not ablated)
  // The method's own factor: the time without it over the time with it; nullopt when it was
  // not ablated.
  std::optional<double> own_factor() const {
    if (attribution_ms == 0 || time_after_s <= 0) return std::nullopt;
    return (time_after_s + attribution_ms * 1e-3) / time_after_s;
  }
  std::string run_id, date, note;
  PitfallCause cause = PitfallCause::none;
  std::string origin =
      "run";        // run (written by the loop), manual (experience add), import (sync, merge)
  std::string uid;  // content hash: the same experience merged twice is one record
};

// The verdict of a speedup (ExperienceRecord::verdict).
ExperienceVerdict experience_verdict(double speedup);
std::string experience_uid(const ExperienceRecord& r);

// $KOPT_EXPERIENCE_DB, else $XDG_DATA_HOME/kopt/experience.db, else
// ~/.local/share/kopt/experience.db.
std::filesystem::path default_experience_db();

// A prediction an author made about a branch, with what the metric did (analysis/prediction.hpp).
struct PredictionRecord {
  std::int64_t id = 0;
  std::string family, chip, bottleneck;
  std::vector<std::string> methods;  // what the branch claimed
  std::string hypothesis;
  Prediction prediction;
  bool accepted = false;  // the branch became the champion
  std::string run_id, date, uid;
};

struct ExperienceFilter {
  std::string family, chip, bottleneck, method, verdict,
      text;  // empty: any; text: a substring of any field
  std::size_t limit = 100;
};

struct Recommendation {
  std::string method;
  double score = 0;  // expected chance of success, evidence-weighted
  std::size_t exact_trials = 0, exact_successes = 0;            // same family, chip and bottleneck
  std::size_t family_trials = 0, family_successes = 0;          // same family on other chips
  std::size_t bottleneck_trials = 0, bottleneck_successes = 0;  // same bottleneck in other families
  double best_speedup = 1;  // the best run gain of a record with this method
  bool demoted =
      false;  // failed repeatedly (twice or more, never a success) on this family and chip
  std::string evidence;  // "3 of 4 in this context, 1 of 2 on other chips"
  // The predictions made for rounds that tried the method (kopt's own and agents'), on this
  // chip at this bottleneck, any family: how many were judged and how many confirmed.
  std::size_t predictions_judged = 0, predictions_confirmed = 0;
  // What the ranking uses: the score weighed by the smoothed hit rate of those predictions
  // ((confirmed + 1) / (judged + 2)), equal to the score where none was judged: a method whose
  // expected effect keeps failing to show ranks below one whose effect shows.
  double rank = 0;
  std::optional<double> hit_rate() const {
    if (predictions_judged == 0) return std::nullopt;
    return static_cast<double>(predictions_confirmed) / static_cast<double>(predictions_judged);
  }
};

// Predictions judged for each method (confirmed, short or refuted; not the unmeasured):
// method -> (judged, confirmed).
using PredictionHits = std::map<std::string, std::pair<std::size_t, std::size_t>>;

// The pitfalls of one method in one situation: its attempts that did not pay, by cause.
struct Pitfall {
  std::string method;
  PitfallCause cause = PitfallCause::none;
  std::size_t times = 0;      // records with this method and cause here
  std::size_t successes = 0;  // records of the method that paid here, for balance
  double worst_speedup = 1;   // the run's gain at its worst (< 1: slower)
  std::string last_run, last_note;
  // "vectorized_global_loads: no SASS change, 2 times (last: toy@... v1 failed: ...)"
  std::string line() const;
};

struct MethodStats {
  std::string key;  // method, family, bottleneck or chip
  std::size_t trials = 0, successes = 0, regressions = 0;
  double mean_speedup = 1;
};

class ExperienceDb {
 public:
  // Creates the file (and its directory) when missing; a file that is not a kopt DB, or
  // one from a newer kopt, is bad input and is left untouched.
  static Expected<ExperienceDb> open(const std::filesystem::path& path);
  ExperienceDb(ExperienceDb&&) noexcept;
  ExperienceDb& operator=(ExperienceDb&&) noexcept;
  ~ExperienceDb();

  // Adds records in one transaction; returns how many were new (duplicates by uid skipped).
  Expected<std::size_t> add(std::vector<ExperienceRecord> records);
  Expected<std::vector<ExperienceRecord>> list(const ExperienceFilter& filter) const;
  // Predictions (experience_predictions.cpp): added in one transaction, duplicates skipped;
  // listed newest first, filtered by family, chip, method (one of those claimed) and verdict.
  Expected<std::size_t> add_predictions(std::vector<PredictionRecord> records);
  Expected<std::vector<PredictionRecord>> list_predictions(const ExperienceFilter& filter) const;
  // Judged predictions by method on this chip at this bottleneck (PredictionHits); a branch
  // that left a method out (an ablation) counts for none.
  Expected<PredictionHits> prediction_hits(const std::string& chip,
                                           const std::string& bottleneck) const;
  Expected<std::vector<Recommendation>> recommend(const std::string& family,
                                                  const std::string& chip,
                                                  const std::string& bottleneck) const;
  // Every method's pitfalls for this family, chip and bottleneck (experience_pitfalls.cpp):
  // the most frequent first.
  Expected<std::vector<Pitfall>> pitfalls(const std::string& family, const std::string& chip,
                                          const std::string& bottleneck) const;
  Expected<std::vector<MethodStats>> stats(
      const std::string& by) const;  // "method", "family", "bottleneck" or "chip"
  // Imports another kopt DB; returns the records that were new.
  Expected<std::size_t> merge(const std::filesystem::path& other);
  // JSON lines, one record a line, for sharing through git.
  Expected<std::size_t> export_jsonl(const std::filesystem::path& file) const;
  // A malformed line is bad input naming file and line; nothing is imported then.
  Expected<std::size_t> import_jsonl(const std::filesystem::path& file);
  const std::filesystem::path& path() const { return m_path; }

 private:
  struct Handle;
  ExperienceDb(std::unique_ptr<Handle> h, std::filesystem::path path);
  std::unique_ptr<Handle> m_h;
  std::filesystem::path m_path;
};

nlohmann::json to_json(const ExperienceRecord& r);
nlohmann::json to_json(const PredictionRecord& r);
Expected<ExperienceRecord> experience_from_json(const nlohmann::json& j);

}  // namespace kopt
