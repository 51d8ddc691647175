#pragma once
// `kopt tune`: search one kernel's parameter space with a strategy and a budget. Each
// point is built, checked and timed (`kopt bench` with a short time cap); points that do
// not compile, fault or are wrong are failures the search learns from. The best point is
// then compared with the default one, interleaved, for a verdict outside the noise.
#include <functional>
#include <optional>
#include <string>

#include "kopt/engine/bencher.hpp"
#include "kopt/engine/search/search.hpp"

namespace kopt {

struct TuneRequest {
  std::string kernel;
  std::map<std::string, std::int64_t> fixed;  // --set: params held at these values
  SearchOptions search;
  BenchOptions bench;       // per evaluation
  double threshold = 0.01;  // for the final verdict
  std::optional<std::string> arch;
  std::filesystem::path cache_root;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

struct TuneReport {
  std::string problem, kernel;
  DeviceInfo device;
  std::uint64_t space_size = 0;
  ParamPoint default_point;
  SearchResult search;
  std::optional<BenchReport> final_comparison;  // best vs default, interleaved
  int exit_code() const;  // 0 with a best point, 1 when every point failed
};

Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request, CheckContext ctx);

nlohmann::json to_json(const TuneReport& r);

}  // namespace kopt
