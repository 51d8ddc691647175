#pragma once
// What `kopt tune` leaves behind: its champion as a file (params, confirmed time, device, the
// command that found it), and the flags that run that point again. Without them a tune's
// result lived only in the scrollback.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kopt/tune/tuner.hpp"

namespace kopt::tune {

// How the tune was asked for, to write the command that repeats it and the one that reuses its
// champion.
struct TuneInvocation {
  std::string problem_dir;                   // as the user named it
  std::string backend;                       // "opencl", "cuda", or empty (kopt's default)
  std::map<std::string, std::int64_t> dims;  // --dim
  std::map<std::string, std::int64_t> held;  // --set: params held during the search
  std::string strategy;                      // as asked (auto, random, ...)
  std::size_t budget = 0;
  std::uint64_t seed = 1;
};

// "--set A=1 --set B=2": every param of the point, in name order.
std::string set_flags(const ParamPoint& point);

// `kopt [--backend B] bench PROBLEM --kernel K [--dim D=V ...] --set ...`: the champion
// measured again (or run with any command that takes --set). nullopt without a champion.
std::optional<std::string> reuse_command(const TuneReport& r, const TuneInvocation& how);

// `kopt [--backend B] tune PROBLEM --kernel K ...`: the search again, with the same seed.
std::string tune_command(const TuneReport& r, const TuneInvocation& how);

// What a reader must know before reusing the champion: the interleaved comparison found it
// slower than the default (the confirmed medians, taken apart, ranked it first within their
// noise); nullopt otherwise.
std::optional<std::string> champion_caveat(const TuneReport& r);

// The champion file: schema_version, problem, kernel, backend, device(s), dims, held params,
// the champion's params with its confirmed median and noise, its ratio to the default point
// (when compared) with the caveat, the tune command and the reuse command. Without a champion,
// "champion" is null and "why" says so.
nlohmann::json champion_json(const TuneReport& r, const TuneInvocation& how,
                             const std::string& date);

// Where tune writes it when --out is not given: kopt-tune/PROBLEM/KERNEL.json, beside
// kopt profile's kopt-profiles/ and kopt optimize's kopt-runs/ (relative: the current
// directory).
std::filesystem::path default_champion_path(const std::string& problem, const std::string& kernel);

}  // namespace kopt::tune
