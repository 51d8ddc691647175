#include "kopt/tune/champion_file.hpp"

#include <fmt/format.h>

namespace kopt::tune {
using nlohmann::json;

namespace {

// A word as a shell reads it: quoted where it holds anything but the safe characters.
std::string shell_word(const std::string& w) {
  bool safe = !w.empty() && w.find_first_not_of(
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_./=:,+-@%") == std::string::npos;
  if (safe) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string flags(const char* flag, const std::map<std::string, std::int64_t>& values) {
  std::string out;
  for (const auto& [k, v] : values) out += fmt::format(" {} {}={}", flag, shell_word(k), v);
  return out;
}

// "kopt [--backend B] COMMAND PROBLEM --kernel K [--dim ...]"
std::string command_head(const char* command, const TuneReport& r, const TuneInvocation& how) {
  return fmt::format("kopt{} {} {} --kernel {}{}",
                     how.backend.empty() ? "" : " --backend " + shell_word(how.backend), command,
                     shell_word(how.problem_dir), shell_word(r.kernel), flags("--dim", how.dims));
}

const Confirmed* confirmed_at(const TuneReport& r, const ParamPoint& p) {
  for (const auto& c : r.stages.confirmed)
    if (c.ok && c.point == p) return &c;
  return nullptr;
}

}  // namespace

std::optional<std::string> champion_caveat(const TuneReport& r) {
  if (!r.stages.champion || !r.final_comparison || !r.final_comparison->comparison ||
      r.final_comparison->comparison->verdict != Verdict::slower)
    return std::nullopt;
  return fmt::format(
      "the confirmed medians put the champion first (±{:.1f} % noise), but measured side by side "
      "it is slower than the default: their difference is within this machine's noise, and the "
      "default is the safer choice",
      100 * r.stages.champion->summary.rel_noise);
}

std::string set_flags(const ParamPoint& point) {
  std::string out;
  for (const auto& [k, v] : point)
    out += fmt::format("{}--set {}={}", out.empty() ? "" : " ", shell_word(k), v);
  return out;
}

std::optional<std::string> reuse_command(const TuneReport& r, const TuneInvocation& how) {
  if (!r.stages.champion) return std::nullopt;
  std::string sets = set_flags(r.stages.champion->point);
  return command_head("bench", r, how) + (sets.empty() ? "" : " " + sets);
}

std::string tune_command(const TuneReport& r, const TuneInvocation& how) {
  return command_head("tune", r, how) + flags("--set", how.held) +
         fmt::format(" --strategy {} --budget {} --seed {}", shell_word(how.strategy), how.budget,
                     how.seed);
}

json champion_json(const TuneReport& r, const TuneInvocation& how, const std::string& date) {
  json devices = json::array();
  for (const auto& d : r.devices) devices.push_back(d.name);
  json j{{"schema_version", 1},
         {"command", "tune"},
         {"date", date},
         {"problem", r.problem},
         {"problem_dir", how.problem_dir},
         {"kernel", r.kernel},
         {"backend", r.devices.empty() ? std::string() : r.device().backend},
         {"device", r.devices.empty() ? std::string() : r.device().name},
         {"devices", devices},
         {"dims", how.dims},
         {"held", how.held},
         {"space_size", r.space_size},
         {"screened", r.stages.search.history.size()},
         {"tune_command", tune_command(r, how)}};
  const auto& champ = r.stages.champion;
  if (!champ) {
    j["champion"] = nullptr;
    j["why"] = "no candidate was confirmed: every point screened failed (compile, run or check)";
    return j;
  }
  j["champion"] = {{"params", champ->point},
                   {"median_s", champ->summary.median},
                   {"rel_noise", champ->summary.rel_noise},
                   {"samples", champ->summary.n},
                   {"is_default", champ->point == r.default_point}};
  j["default"] = {{"params", r.default_point}};
  if (const Confirmed* d = confirmed_at(r, r.default_point))
    j["default"]["median_s"] = d->summary.median;
  if (r.final_comparison && r.final_comparison->comparison) {
    const Comparison& c = *r.final_comparison->comparison;
    j["vs_default"] = {{"ratio", c.ratio},
                       {"ci_low", c.ci_low},
                       {"ci_high", c.ci_high},
                       {"pairs", c.pairs},
                       {"verdict", std::string(verdict_name(c.verdict))}};
  } else {
    j["vs_default"] = nullptr;
  }
  auto caveat = champion_caveat(r);
  j["caveat"] = caveat ? json(*caveat) : json(nullptr);
  j["set_flags"] = set_flags(champ->point);
  j["reuse_command"] = *reuse_command(r, how);
  return j;
}

std::filesystem::path default_champion_path(const std::string& problem, const std::string& kernel) {
  return std::filesystem::path("kopt-tune") / problem / (kernel + ".json");
}

}  // namespace kopt::tune
