#include "kopt/backend/bench_job.hpp"

#include <algorithm>
#include <stdexcept>

namespace kopt {

using nlohmann::json;

std::string_view cache_mode_name(CacheMode m) {
  return m == CacheMode::cold ? "cold" : "hot";
}
namespace {

RunStatus status_from(const json& j) {
  auto s = parse_run_status(j.at("status").get<std::string>());
  if (!s) throw std::invalid_argument("unknown status " + j.at("status").dump());
  return *s;
}

StopReason stop_from(const std::string& name) {
  for (StopReason r : {StopReason::not_yet, StopReason::noise_reached, StopReason::noise_plateau,
                       StopReason::time_cap, StopReason::sample_cap, StopReason::verdict_reached})
    if (stop_reason_name(r) == name) return r;
  throw std::invalid_argument("unknown stop reason " + name);
}

}  // namespace

json to_json(const BenchOptions& o) {
  return {{"mode", cache_mode_name(o.mode)},
          {"warmup_s", o.warmup_s},
          {"min_samples", o.rule.min_samples},
          {"min_time_s", o.rule.min_time_s},
          {"max_noise", o.rule.max_noise},
          {"max_time_s", o.rule.max_time_s},
          {"plateau_window", o.rule.plateau_window},
          {"plateau_tolerance", o.rule.plateau_tolerance},
          {"max_samples", o.rule.max_samples},
          {"blocking_kernel", o.blocking_kernel},
          {"flush_bytes", o.flush_bytes},
          {"flush", flush_method_name(o.flush)},
          {"verify_on", name_of(o.verify_on)},
          {"paired", o.paired},
          {"verdict_threshold", o.verdict_threshold},
          {"graph_below_us", o.graph_below_us},
          {"graph_sample_us", o.graph_sample_us},
          {"verify_samples", o.verify_samples}};
}

BenchOptions bench_options_from_json(const json& j) {
  BenchOptions o;
  std::string mode = j.value("mode", std::string("cold"));
  if (mode != "cold" && mode != "hot") throw std::invalid_argument("unknown cache mode " + mode);
  o.mode = mode == "cold" ? CacheMode::cold : CacheMode::hot;
  o.warmup_s = j.value("warmup_s", o.warmup_s);
  o.rule.min_samples = j.value("min_samples", o.rule.min_samples);
  o.rule.min_time_s = j.value("min_time_s", o.rule.min_time_s);
  o.rule.max_noise = j.value("max_noise", o.rule.max_noise);
  o.rule.max_time_s = j.value("max_time_s", o.rule.max_time_s);
  o.rule.plateau_window = j.value("plateau_window", o.rule.plateau_window);
  o.rule.plateau_tolerance = j.value("plateau_tolerance", o.rule.plateau_tolerance);
  o.rule.max_samples = j.value("max_samples", o.rule.max_samples);
  o.blocking_kernel = j.value("blocking_kernel", o.blocking_kernel);
  o.flush_bytes = j.value("flush_bytes", o.flush_bytes);
  std::string flush = j.value("flush", std::string("read"));
  if (flush != "read" && flush != "write")
    throw std::invalid_argument("unknown flush method " + flush);
  o.flush = flush == "read" ? FlushMethod::read : FlushMethod::write;
  const std::string where = j.value("verify_on", std::string("auto"));
  auto verify_on = parse_enum<VerifyOn>(where);
  if (!verify_on)
    throw std::invalid_argument("unknown verify_on " + where +
                                " (known: " + enum_names<VerifyOn>() + ")");
  o.verify_on = *verify_on;
  o.paired = j.value("paired", o.paired);
  o.verdict_threshold = j.value("verdict_threshold", o.verdict_threshold);
  o.graph_below_us = j.value("graph_below_us", o.graph_below_us);
  o.graph_sample_us = j.value("graph_sample_us", o.graph_sample_us);
  o.verify_samples = j.value("verify_samples", o.verify_samples);
  return o;
}

json to_json(const SampleVerification& v) {
  return {{"enabled", v.enabled},
          {"poisoned_samples", v.poisoned_samples},
          {"reset_samples", v.reset_samples},
          {"last_checked", v.last_checked},
          {"failed_sample", v.failed_sample},
          {"failure", v.failure},
          {"note", v.note},
          {"reference_checked", v.reference_checked},
          {"check_failure", v.check_failure},
          {"secret_samples", v.secret_samples},
          {"device_compared", v.device_compared},
          {"compared_on_device", v.compared_on_device},
          {"read_back_bytes", v.read_back_bytes},
          {"verify_s", v.verify_s}};
}

SampleVerification sample_verification_from_json(const json& j) {
  SampleVerification v;
  v.enabled = j.value("enabled", false);
  v.poisoned_samples = j.value("poisoned_samples", std::size_t{0});
  v.reset_samples = j.value("reset_samples", std::size_t{0});
  v.last_checked = j.value("last_checked", false);
  v.failed_sample = j.value("failed_sample", std::int64_t{-1});
  v.failure = j.value("failure", std::string{});
  v.note = j.value("note", std::string{});
  v.reference_checked = j.value("reference_checked", false);
  v.check_failure = j.value("check_failure", std::string{});
  v.secret_samples = j.value("secret_samples", std::vector<std::int64_t>{});
  v.device_compared = j.value("device_compared", std::size_t{0});
  v.compared_on_device = j.value("compared_on_device", std::size_t{0});
  v.read_back_bytes = j.value("read_back_bytes", std::uint64_t{0});
  v.verify_s = j.value("verify_s", 0.0);
  return v;
}

json to_json(const SampleSeries& s) {
  return {{"label", s.label},
          {"samples_s", s.samples_s},
          {"throttled", s.throttled},
          {"batch", s.batch},
          {"graph", s.graph},
          {"launch_overhead_us", s.launch_overhead_us},
          {"host_in_window", s.host_in_window},
          {"blocking_timeouts", s.blocking_timeouts},
          {"recompiles", s.recompiles},
          {"graph_breaks", s.graph_breaks},
          {"warmup_s", s.warmup_s},
          {"wall_s", s.wall_s},
          {"stop", stop_reason_name(s.stop)},
          {"verification", to_json(s.verification)}};
}

SampleSeries sample_series_from_json(const json& j) {
  SampleSeries s;
  s.label = j.value("label", std::string{});
  s.samples_s = j.at("samples_s").get<std::vector<double>>();
  s.throttled = j.value("throttled", std::vector<bool>{});
  s.batch = j.value("batch", 1);
  s.graph = j.value("graph", false);
  s.launch_overhead_us = j.value("launch_overhead_us", 0.0);
  s.host_in_window = j.value("host_in_window", false);
  s.blocking_timeouts = j.value("blocking_timeouts", 0);
  s.recompiles = j.value("recompiles", -1);
  s.graph_breaks = j.value("graph_breaks", -1);
  s.warmup_s = j.value("warmup_s", 0.0);
  s.wall_s = j.value("wall_s", 0.0);
  s.stop = stop_from(j.value("stop", std::string("not_yet")));
  if (auto v = j.find("verification"); v != j.end() && v->is_object())
    s.verification = sample_verification_from_json(*v);
  return s;
}

json to_json(const BenchResult& r) {
  json series = json::array();
  for (const auto& s : r.series) series.push_back(to_json(s));
  return {{"status", run_status_name(r.status)},
          {"error", r.error},
          {"fatal", r.fatal},
          {"series", series},
          {"clocks_before", r.clocks_before},
          {"clocks_after", r.clocks_after},
          {"flush_bytes", r.flush_bytes},
          {"flush_method", r.flush_method},
          {"sandbox", r.sandbox}};
}

BenchResult bench_result_from_json(const json& j) {
  BenchResult r;
  r.status = status_from(j);
  r.error = j.value("error", std::string{});
  r.fatal = j.value("fatal", false);
  for (const auto& s : j.value("series", json::array()))
    r.series.push_back(sample_series_from_json(s));
  if (j.contains("clocks_before")) r.clocks_before = j["clocks_before"].get<Clocks>();
  if (j.contains("clocks_after")) r.clocks_after = j["clocks_after"].get<Clocks>();
  r.flush_bytes = j.value("flush_bytes", std::int64_t{0});
  r.flush_method = j.value("flush_method", std::string{});
  r.sandbox = j.value("sandbox", std::string{});
  return r;
}

json to_json(const CeilingsResult& r) {
  return {{"status", run_status_name(r.status)},
          {"error", r.error},
          {"ceilings", r.ceilings},
          {"clocks_before", r.clocks_before},
          {"clocks_after", r.clocks_after}};
}

CeilingsResult ceilings_result_from_json(const json& j) {
  CeilingsResult r;
  r.status = status_from(j);
  r.error = j.value("error", std::string{});
  r.ceilings = j.value("ceilings", std::vector<Ceiling>{});
  if (j.contains("clocks_before")) r.clocks_before = j["clocks_before"].get<Clocks>();
  if (j.contains("clocks_after")) r.clocks_after = j["clocks_after"].get<Clocks>();
  return r;
}

}  // namespace kopt
