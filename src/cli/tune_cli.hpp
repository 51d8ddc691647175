#pragma once
// kopt tune's options and what it does over several shapes (tune_shapes.cpp): where a shape's
// search starts from the shapes tuned before it, and the dispatch table over all of them.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "kopt/evaluate/worker_pool.hpp"
#include "kopt/tune/tuner.hpp"

namespace kopt::cli {

struct TuneCliOptions {
  ProblemSelection sel;
  ShapeFlags axes;  // --axis NAME=V1,V2,...: a champion per shape, a dispatch table
  std::string strategy = "auto";
  std::size_t budget = 30;
  double time_budget_s = 0;
  std::uint64_t seed = 1;
  double max_time_s = evaluate::k_tune_max_time_s;
  unsigned jobs = 0;                                      // 0: the machine's cores
  std::size_t batch = tune::TuneRequest::k_screen_batch;  // candidates screened together
  std::size_t screen_samples = tune::TuneRequest{}.screen_samples;
  std::string verify_on = "auto";  // --verify-on: where samples' outputs are compared
  std::string confirm = "auto";    // auto (the rule), all, or a number: at most that many
  std::string gpus;                // --gpus all|N,M,...: screening split over these devices
  std::string cluster;             // --cluster ray|ray:ADDRESS
  bool allow_mixed = false;
  std::string out;  // the champion file (default: kopt-tune/PROBLEM/KERNEL.json)
  // --shape-search, at several shapes: transfer (a shape's search evaluates the champions of the
  // nearest shapes already tuned first, then searches as alone does), climb (where the space is
  // larger than the budget, it climbs from those champions and stops when the climbs converge)
  // or alone (each shape searched as if it were the only one).
  std::string shape_search = "transfer";
  Problem::Goal goal = Problem::Goal::latency;  // the problem's [goal], set by the first shape
  // The shapes tuned so far in this command: their dims and best confirmed points, best first.
  std::vector<std::pair<std::map<std::string, std::int64_t>, std::vector<ParamPoint>>> tuned;
};

// The points a shape's search starts from under --shape-search transfer: the best two confirmed
// points of each of the two tuned shapes nearest to `dims` (distance: the sum over dims of
// |log(a / b)|), nearest first; and those shapes' labels.
std::pair<std::vector<ParamPoint>, std::vector<std::string>> transferred_starts(
    const TuneCliOptions& o, const std::map<std::string, std::int64_t>& dims);

// A shape's best confirmed points, best first, from its tune document.
std::vector<ParamPoint> best_confirmed(const nlohmann::json& doc);

// At several shapes: the dispatch table over the shapes' confirmed measurements, written beside
// where the champion file goes (KERNEL.dispatch.json and .hpp) and printed.
nlohmann::json tune_dispatch(const TuneCliOptions& o, const nlohmann::json& shapes, bool print);

}  // namespace kopt::cli
