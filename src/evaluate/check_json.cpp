// kopt check's JSON (docs/json/commands.json): every kernel, seed and output compared.
#include <cmath>

#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/sanitize.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt::evaluate {
using nlohmann::json;

namespace {

json to_json(const CompareResult& c) {
  json mism = json::array();
  for (const auto& m : c.first_mismatches)
    mism.push_back(
        {{"index", m.index}, {"flat", m.flat}, {"got", m.got}, {"expected", m.expected}});
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(std::to_string(v)); };
  return json{{"tensor", c.tensor},
              {"numel", c.numel},
              {"atol", c.tolerance.atol},
              {"rtol", c.tolerance.rtol},
              {"max_abs_err", num(c.max_abs_err)},
              {"max_rel_err", num(c.max_rel_err)},
              {"rel_l2_err", num(c.rel_l2_err)},
              {"mismatches", c.mismatches},
              {"first_mismatches", mism},
              {"nan_count", c.nan_count},
              {"inf_count", c.inf_count},
              {"unwritten", c.unwritten},
              {"passed", c.passed}};
}

}  // namespace

json to_json(const CheckReport& r) {
  json kernels = json::array();
  for (const auto& k : r.kernels) {
    json seeds = json::array();
    for (const auto& s : k.seeds) {
      json outs = json::array();
      for (const auto& o : s.outputs) outs.push_back(to_json(o));
      seeds.push_back({{"seed", s.seed},
                       {"input_scale", s.input_scale},
                       {"status", run_status_name(s.status)},
                       {"error", s.error},
                       {"passed", s.passed},
                       {"kernel_ms", s.kernel_ms},
                       {"modified_inputs", s.modified_inputs},
                       {"compared_on_device", s.compared_on_device},
                       {"outputs", outs}});
    }
    kernels.push_back({{"kernel", k.kernel},
                       {"source", k.source},
                       {"params", k.point},
                       {"grid", k.launch.grid},
                       {"block", k.launch.block},
                       {"shared_mem", k.launch.shared_mem},
                       {"status", kernel_status_name(k.status)},
                       {"error", k.error},
                       {"build", to_json(k.build)},
                       {"resources", k.resources},
                       {"check_s", k.check_s},
                       {"seeds", seeds}});
    kernels.back()["precision"] = k.precision ? to_json(*k.precision) : json(nullptr);
    kernels.back()["precision_note"] = k.precision_note;
    json fp64 = json::array();
    for (const auto& e : k.fp64)
      fp64.push_back({{"tensor", e.tensor},
                      {"rel_l2", e.rel_l2},
                      {"reference_rel_l2", e.reference_rel_l2},
                      {"bound", e.bound},
                      {"passed", e.passed}});
    kernels.back()["fp64"] = fp64;
    if (!k.sanitizer.empty()) {
      json outcomes = json::array();
      for (const auto& o : k.sanitizer) outcomes.push_back(to_json(o));
      kernels.back()["sanitizer"] = {{"verdict", *sanitizer_verdict(k.sanitizer)},
                                     {"tools", outcomes}};
    }
  }
  json shape_checks = json::array();
  for (const auto& c : r.shape_checks)
    shape_checks.push_back({{"origin", shape_origin_name(c.origin)},
                            {"dims", c.dims},
                            {"kernels", c.kernels},
                            {"failed", c.failed},
                            {"held", c.held},
                            {"note", c.note}});
  json reference_outputs = json::array();
  for (const auto& [seed, outputs] : r.reference_outputs)
    for (const auto& [name, summary] : outputs) {
      json o = to_json(summary);
      o["seed"] = seed;
      o["tensor"] = name;
      reference_outputs.push_back(o);
    }
  json j{{"schema_version", 1},
         {"command", "check"},
         {"problem", r.problem},
         {"problem_dir", r.problem_dir},
         {"arch", r.arch},
         {"toolkit", r.toolkit},
         {"reference", {{"kind", r.reference_kind}, {"cached", r.reference_cached}}},
         {"seeds", r.seeds},
         {"secret_seed", r.secret_seed ? json(*r.secret_seed) : json(nullptr)},
         {"other_shape", {{"dims", r.other_shape}, {"note", r.other_shape_note}}},
         {"shape_checks", shape_checks},
         {"wide_seed", r.wide_seed ? json(*r.wide_seed) : json(nullptr)},
         {"wide_seed_note", r.wide_seed_note},
         {"fp64_reference",
          {{"seed", r.fp64_seed ? json(*r.fp64_seed) : json(nullptr)}, {"note", r.fp64_note}}},
         {"kernels", kernels},
         {"reference_outputs", reference_outputs},
         {"worker_starts", r.worker_starts},
         {"device", r.device ? to_json(*r.device) : json(nullptr)},
         {"device_error", r.device_error},
         {"exit_code", r.exit_code()}};
  return j;
}

}  // namespace kopt::evaluate
