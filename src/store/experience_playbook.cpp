#include "kopt/store/experience_playbook.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <tuple>

#include "kopt/core/fs.hpp"
#include "kopt/core/toml_text.hpp"

namespace kopt {
namespace fs = std::filesystem;

namespace {

struct Observed {
  std::string cls, chip, method;
  std::size_t trials = 0, successes = 0;
  double best_gain = 0;
  std::map<std::string, std::size_t> pitfalls;  // cause -> times
  std::size_t judged = 0, confirmed = 0;
  std::vector<std::string> evidence;  // newest first, at most three
};

}  // namespace

std::set<std::string> playbook_methods(const std::string& text) {
  std::set<std::string> out;
  static const std::regex list(R"(^\s*methods\s*=\s*\[([^\]]*)\])");
  static const std::regex id(R"(^\s*id\s*=\s*"([^"]+)\")");
  static const std::regex item("\"([^\"]+)\"");
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, list)) {
      std::string items = m[1];
      for (std::sregex_iterator it(items.begin(), items.end(), item), none; it != none; ++it)
        out.insert((*it)[1]);
    } else if (std::regex_search(line, m, id)) {
      out.insert(m[1]);
    }
    start = end + 1;
  }
  return out;
}

std::string with_observed_section(const std::string& text,
                                  const std::vector<ExperienceRecord>& records,
                                  const HitsBySituation& hits, const std::string& db_name,
                                  const std::string& date) {
  std::string kept = text;
  if (auto at = kept.find(k_observed_marker); at != std::string::npos) kept.resize(at);
  while (!kept.empty() && (kept.back() == '\n' || kept.back() == ' ')) kept.pop_back();
  kept += "\n";
  const std::set<std::string> methods = playbook_methods(kept);
  std::map<std::tuple<std::string, std::string, std::string>, Observed> by;
  for (const auto& r : records) {  // newest first
    if (!methods.contains(r.method)) continue;
    Observed& o = by[{r.bottleneck, r.chip, r.method}];
    o.cls = r.bottleneck;
    o.chip = r.chip;
    o.method = r.method;
    ++o.trials;
    const bool paid =
        r.verdict.value_or(experience_verdict(r.speedup)) == ExperienceVerdict::success;
    o.successes += paid;
    o.best_gain = std::max(o.best_gain, r.speedup);
    if (r.cause != PitfallCause::none) ++o.pitfalls[std::string(name_of(r.cause))];
    if (o.evidence.size() < 3)
      o.evidence.push_back(
          fmt::format("{} ({}): {:.2f}x, {}{}", r.run_id, r.family, r.speedup,
                      r.verdict.value_or(experience_verdict(r.speedup)),
                      r.cause == PitfallCause::none ? "" : ", " + std::string(name_of(r.cause))));
  }
  for (auto& [key, o] : by)
    if (auto h = hits.find({o.cls, o.chip}); h != hits.end())
      if (auto m = h->second.find(o.method); m != h->second.end())
        std::tie(o.judged, o.confirmed) = m->second;
  if (by.empty()) return kept;
  std::vector<Observed> rows;
  for (auto& [key, o] : by) rows.push_back(std::move(o));
  std::stable_sort(rows.begin(), rows.end(), [](const Observed& a, const Observed& b) {
    if (a.cls != b.cls) return a.cls < b.cls;
    if (a.chip != b.chip) return a.chip < b.chip;
    return a.trials > b.trials;
  });
  std::string out = kept + "\n" + k_observed_marker + "\n";
  out += fmt::format("# From {} on {}: per bottleneck class, chip and method, what runs saw.\n",
                     db_name, date);
  for (const auto& o : rows) {
    std::vector<std::string> pitfalls;
    for (const auto& [cause, n] : o.pitfalls) pitfalls.push_back(fmt::format("{} ({})", cause, n));
    out += fmt::format(
        "\n[[observed]]\nclass = {}\nchip = {}\nmethod = {}\ntrials = {}\nsuccesses = {}\n"
        "best_gain = {:.3f}\npitfalls = {}\npredictions = {}\nevidence = {}\n",
        toml_string(o.cls), toml_string(o.chip), toml_string(o.method), o.trials, o.successes,
        o.best_gain, toml_string_list(pitfalls),
        toml_string(o.judged ? fmt::format("{} of {} confirmed", o.confirmed, o.judged)
                             : std::string("none judged")),
        toml_string_list(o.evidence));
  }
  return out;
}

Expected<std::vector<std::pair<std::string, std::size_t>>> write_observed_playbooks(
    const ExperienceDb& db, const fs::path& dir, const std::string& date) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Unexpected(bad_input("no playbooks folder here (--playbooks DIR)", dir.string()));
  ExperienceFilter all;
  all.limit = static_cast<std::size_t>(-1) >> 1;
  auto records = db.list(all);
  if (!records) return Unexpected(records.error());
  HitsBySituation hits;
  for (const auto& r : *records)
    if (!hits.contains({r.bottleneck, r.chip})) {
      auto h = db.prediction_hits(r.chip, r.bottleneck);
      if (!h) return Unexpected(h.error());
      hits[{r.bottleneck, r.chip}] = std::move(*h);
    }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& f : files) {
    auto text = read_text_file(f);
    if (!text) return Unexpected(text.error());
    if (playbook_methods(*text).empty()) continue;  // it names no method (the metric guide)
    std::string now =
        with_observed_section(*text, *records, hits, db.path().filename().string(), date);
    std::size_t tables = 0;
    for (std::size_t at = 0; (at = now.find("\n[[observed]]\n", at)) != std::string::npos; ++at)
      ++tables;
    if (now != *text)
      if (auto w = write_text_atomic(f, now); !w) return Unexpected(w.error());
    out.emplace_back(f.filename().string(), tables);
  }
  return out;
}

}  // namespace kopt
