// A bench's report as JSON (`kopt bench --json`, the run records of optimize and tune): its
// variants with their series, rates and flags, the device, the roofs and the timings.
#include "kopt/evaluate/bench.hpp"

namespace kopt::evaluate {
using nlohmann::json;

namespace {
json flags_json(const std::vector<DistributionFlag>& flags) {
  json out = json::array();
  for (const auto& f : flags) out.push_back({{"name", f.name}, {"detail", f.detail}});
  return out;
}
}  // namespace

bool is_torch_eager_row(const std::string& kernel) {
  return kernel.rfind("torch eager", 0) == 0;
}

json to_json(const BenchReport& r) {
  json variants = json::array();
  for (const auto& v : r.variants)
    variants.push_back(
        {{"kernel", v.kernel},
         {"params", v.point},
         {"status", v.status},
         {"error", v.error},
         {"build_key", v.build.key},
         {"arch", v.build.arch},
         {"summary", to_json(v.summary)},
         {"throttled_samples", v.throttled_samples},
         {"gbps", r.cost.bytes ? json(v.gbps) : json(nullptr)},
         {"gflops", r.cost.flops ? json(v.gflops) : json(nullptr)},  // null: no flops formula
         {"pct_bandwidth_ceiling", v.pct_bandwidth_ceiling},
         {"pct_compute_ceiling", v.pct_compute_ceiling},
         {"floor_s", v.floor_s},
         {"flags", flags_json(v.flags)},
         {"reviews", v.reviews},
         {"precision", v.precision ? to_json(*v.precision) : json(nullptr)},
         {"precision_note", v.precision_note},
         {"series", to_json(v.series)}});
  for (std::size_t i = 0; i < r.variants.size(); ++i)
    if (!r.variants[i].device.empty()) variants[i]["device"] = r.variants[i].device;
  json j{{"schema_version", 1},
         {"command", "bench"},
         {"problem", r.problem},
         {"device", to_json(r.device)},
         {"toolkit", r.toolkit},
         {"options", to_json(r.options)},
         {"flush_bytes", r.flush_bytes},
         {"flush_method", r.flush_method},
         {"clocks_before", r.clocks_before},
         {"clocks_after", r.clocks_after},
         {"ceilings", r.ceilings_source},
         {"sandbox", r.sandbox},
         {"roofs", to_json(r.roofs)},
         {"compute_roof",
          {{"name", r.compute_roof.name},
           {"flops", r.compute_roof.rate},
           {"source", r.compute_roof.source}}},
         {"variants", variants},
         {"times",
          {{"build_s", r.build_s},
           {"check_s", r.check_s},
           {"measure_s", r.measure_s},
           {"wall_s", r.wall_s}}},
         {"exit_code", r.exit_code()}};
  j["comparison"] = r.comparison ? to_json(*r.comparison) : json(nullptr);
  return j;
}

}  // namespace kopt::evaluate
