#include "kopt/engine/tuner.hpp"

namespace kopt {
using nlohmann::json;

int TuneReport::exit_code() const { return search.best ? 0 : 1; }

namespace {

BenchRequest bench_request(const TuneRequest& r, std::vector<BenchVariantSpec> variants, bool compare) {
  return kopt::bench_request(std::move(variants), compare, r.bench, r.threshold, r.arch, r.cache_root);
}

std::map<std::string, std::int64_t> as_sets(const ParamPoint& p) { return {p.begin(), p.end()}; }

}  // namespace

Expected<TuneReport> run_tune(const Problem& problem, const TuneRequest& request, CheckContext ctx) {
  const KernelSpec* k = problem.find_kernel(request.kernel);
  if (!k) return Unexpected(bad_input("no kernel named '" + request.kernel + "'", problem.spec_path.string()));
  if (k->params.empty())
    return Unexpected(bad_input("kernel '" + k->name + "' has no params to tune", problem.spec_path.string(),
                                k->where.line, k->where.field + ".params"));
  auto def = resolve_point(problem, *k, request.fixed);
  if (!def) return Unexpected(def.error());
  TuneReport report;
  report.problem = problem.name;
  report.kernel = k->name;
  report.default_point = *def;
  auto device = ctx.worker.device_info();
  if (!device) return Unexpected(device.error());
  report.device = *device;

  SearchSpace space = SearchSpace::from_kernel(*k, problem.dim_scope());
  for (auto& [name, values] : space.params)  // --set holds a param at one value
    if (auto it = request.fixed.find(name); it != request.fixed.end()) values = {it->second};
  report.space_size = space.size();

  Objective objective = [&](const ParamPoint& point) {
    Evaluation e;
    e.point = point;
    auto b = run_bench(problem, bench_request(request, {{k->name, as_sets(point)}}, false), ctx);
    if (!b) {
      e.failure = b.error().message;
      return e;
    }
    const BenchVariant& v = b->variants.at(0);
    e.ok = v.status == "ok";
    e.cost = v.summary.median;
    if (!e.ok) e.failure = v.status + (v.error.empty() ? "" : ": " + v.error);
    request.log((e.ok ? "  " : "  FAILED ") + point_to_string(point) + (e.ok ? "" : ": " + e.failure));
    return e;
  };
  SearchOptions so = request.search;
  so.start.insert(so.start.begin(), *def);
  report.search = run_search(space, objective, so);

  if (report.search.best && report.search.best->point != *def) {
    auto cmp = run_bench(problem,
                         bench_request(request, {{k->name, as_sets(report.search.best->point)}, {k->name, as_sets(*def)}}, true),
                         ctx);
    if (cmp) report.final_comparison = *cmp;
  }
  return report;
}

json to_json(const TuneReport& r) {
  json j{{"schema_version", 1},        {"command", "tune"},           {"problem", r.problem},
         {"kernel", r.kernel},         {"device", r.device.name},     {"space_size", r.space_size},
         {"default_point", r.default_point}, {"search", to_json(r.search)}};
  j["final_comparison"] = r.final_comparison && r.final_comparison->comparison
                              ? to_json(*r.final_comparison)["comparison"]
                              : json(nullptr);
  return j;
}

}  // namespace kopt
