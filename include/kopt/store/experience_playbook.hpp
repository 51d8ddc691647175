#pragma once
// What the experience DB has seen, written into a playbook (playbooks/*.toml) as an "observed"
// section: per bottleneck class, chip and method, how often it paid, its best gain, its
// pitfalls and its predictions' hit rate, with the runs as evidence. The section is
// generated: it starts at a marker line and runs to the end of the file, and writing it
// again replaces it; everything above the marker is the authors' and is kept byte for byte.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kopt/core/error.hpp"
#include "kopt/store/experience_db.hpp"

namespace kopt {

inline constexpr const char* k_observed_marker =
    "# ---- observed: written by `kopt experience playbook` from the experience DB; it replaces "
    "everything below this line ----";

// The methods a playbook speaks of: its [[bottleneck]] entries' `methods` and its [[method]]
// entries' `id`s (a line-level read: no TOML library needed for two keys).
std::set<std::string> playbook_methods(const std::string& text);

// The predictions' hits by (bottleneck class, chip): ExperienceDb::prediction_hits of each.
using HitsBySituation = std::map<std::pair<std::string, std::string>, PredictionHits>;

// `text` with its observed section (re)written from `records` of the playbook's methods:
// one [[observed]] table per class, chip and method, the most tried first, with the hit rate
// of `hits`. No record of its methods: the section is removed. `db_name` and `date` say where
// it came from.
std::string with_observed_section(const std::string& text,
                                  const std::vector<ExperienceRecord>& records,
                                  const HitsBySituation& hits, const std::string& db_name,
                                  const std::string& date);

// Every *.toml of `dir` that names methods (the metric guide names none) rewritten in place
// (atomically); returns, per file, how many [[observed]] tables it now has.
Expected<std::vector<std::pair<std::string, std::size_t>>> write_observed_playbooks(
    const ExperienceDb& db, const std::filesystem::path& dir, const std::string& date);

}  // namespace kopt
