#pragma once
// The worker's JSON-lines protocol: one request per line on stdin, one reply per line on
// stdout. Requests: {"op":"hello"}, {"op":"device_info"}, {"op":"run","job":{...}},
// {"op":"bench","job":{"variants":[...],"options":{...}}}, {"op":"ceilings"},
// {"op":"toolkit"}, {"op":"compile","request":{...},"path":"..."} (a backend that builds with
// the device's driver), {"op":"shutdown"}. Replies carry "ok" and, when false, "error".
#include <nlohmann/json.hpp>

#include "kopt/backend/bench_job.hpp"
#include "kopt/backend/device_info.hpp"
#include "kopt/backend/run_job.hpp"

namespace kopt {

inline constexpr int k_protocol_version = 1;

nlohmann::json to_json(const RunJob& job);
RunJob run_job_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunResult& r);
RunResult run_result_from_json(const nlohmann::json& j);
nlohmann::json to_json(const BenchJob& job);
nlohmann::json to_json(const ResolvedArg& a);
ResolvedArg resolved_arg_from_json(const nlohmann::json& j);

}  // namespace kopt
