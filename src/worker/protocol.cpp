#include "kopt/worker/protocol.hpp"

#include <stdexcept>

#include "kopt/backend/drawn_inputs.hpp"

namespace kopt {
using nlohmann::json;

namespace {

DType dtype_from(const json& j) {
  auto d = parse_dtype(j.get<std::string>());
  if (!d) throw std::invalid_argument("unknown dtype " + j.dump());
  return *d;
}

Role role_from(const std::string& s) {
  if (s == "input") return Role::input;
  if (s == "output") return Role::output;
  if (s == "inout") return Role::inout;
  throw std::invalid_argument("unknown role " + s);
}

}  // namespace

json to_json(const ResolvedArg& a) {
  if (!a.tensor.empty() && a.tensor_map)
    return json{{"tensor", a.tensor},
                {"tensor_map", {{"box", a.tensor_map->box}, {"swizzle", a.tensor_map->swizzle}}}};
  if (!a.tensor.empty()) return json{{"tensor", a.tensor}};
  json j{{"dtype", dtype_name(a.dtype)}};
  if (std::holds_alternative<std::int64_t>(a.value))
    j["int"] = std::get<std::int64_t>(a.value);
  else
    j["float"] = std::get<double>(a.value);
  return j;
}

ResolvedArg resolved_arg_from_json(const json& j) {
  ResolvedArg a;
  if (j.contains("tensor")) {
    a.tensor = j.at("tensor").get<std::string>();
    if (j.contains("tensor_map")) {
      const json& m = j.at("tensor_map");
      a.tensor_map =
          ResolvedTensorMap{m.at("box").get<std::vector<std::int64_t>>(), m.value("swizzle", 0)};
    }
    return a;
  }
  a.dtype = dtype_from(j.at("dtype"));
  if (j.contains("int"))
    a.value = j.at("int").get<std::int64_t>();
  else
    a.value = j.at("float").get<double>();
  return a;
}

json to_json(const RunJob& job) {
  json tensors = json::array();
  for (const auto& t : job.tensors)
    tensors.push_back({{"name", t.name},
                       {"dtype", dtype_name(t.dtype)},
                       {"bytes", t.bytes},
                       {"role", role_name(t.role)},
                       {"input_path", t.input_path.string()},
                       {"output_path", t.output_path.string()},
                       {"shape", t.shape},
                       {"checksum", t.checksum},
                       {"atol", t.tolerance.atol},
                       {"rtol", t.tolerance.rtol},
                       {"expected_path", t.expected_path.string()},
                       {"secret_input_path", t.secret_input_path.string()},
                       {"secret_expected_path", t.secret_expected_path.string()},
                       {"draw", draw_json(t.draw)},
                       {"secret_draw", draw_json(t.secret_draw)}});
  json args = json::array();
  for (const auto& a : job.args) args.push_back(to_json(a));
  json exact_of = json::object();
  for (const auto& [name, source] : job.exact_of) exact_of[name] = to_json(source);
  json compare = json::array();
  for (const auto& c : job.compare)
    compare.push_back({{"name", c.name},
                       {"atol", c.tolerance.atol},
                       {"rtol", c.tolerance.rtol},
                       {"expected", to_json(c.expected)},
                       {"exact", c.exact ? to_json(*c.exact) : json()}});
  return json{{"label", job.label},
              {"kind", module_kind_name(job.kind)},
              {"scalars", job.scalars},
              {"module_path", job.module_path.string()},
              {"entry", job.entry},
              {"grid", job.grid},
              {"block", job.block},
              {"shared_mem", job.shared_mem},
              {"args", args},
              {"tensors", tensors},
              {"in_f64", job.in_f64},
              {"summarize_outputs", job.summarize_outputs},
              {"keep_outputs", job.keep_outputs},
              {"keep_margin", job.keep_margin},
              {"hash_inputs", job.hash_inputs},
              {"exact_of", exact_of},
              {"compare", compare}};
}

RunJob run_job_from_json(const json& j) {
  RunJob job;
  job.label = j.value("label", std::string{});
  std::string kind = j.at("kind").get<std::string>();
  auto parsed = parse_module_kind(kind);
  if (!parsed) throw std::invalid_argument("unknown module kind " + kind);
  job.kind = *parsed;
  if (j.contains("scalars"))
    job.scalars = j.at("scalars").get<std::map<std::string, std::int64_t>>();
  job.module_path = j.at("module_path").get<std::string>();
  job.entry = j.at("entry").get<std::string>();
  job.grid = j.at("grid").get<std::array<std::int64_t, 3>>();
  job.block = j.at("block").get<std::array<std::int64_t, 3>>();
  job.shared_mem = j.at("shared_mem").get<std::int64_t>();
  job.in_f64 = j.value("in_f64", false);
  job.summarize_outputs = j.value("summarize_outputs", false);
  job.keep_outputs = j.value("keep_outputs", std::string{});
  job.keep_margin = j.value("keep_margin", std::int64_t{0});
  job.hash_inputs = j.value("hash_inputs", false);
  if (j.contains("exact_of"))
    for (const auto& [name, source] : j.at("exact_of").items())
      job.exact_of[name] = output_source_from_json(source);
  if (j.contains("compare"))
    for (const auto& c : j.at("compare")) {
      OutputComparison oc{c.value("name", std::string{}),
                          Tolerance{c.value("atol", 0.0), c.value("rtol", 0.0)},
                          output_source_from_json(c.at("expected")), std::nullopt};
      if (c.contains("exact") && c.at("exact").is_object())
        oc.exact = output_source_from_json(c.at("exact"));
      job.compare.push_back(std::move(oc));
    }
  for (const auto& a : j.at("args")) job.args.push_back(resolved_arg_from_json(a));
  for (const auto& t : j.at("tensors"))
    job.tensors.push_back(JobTensor{
        t.at("name").get<std::string>(), dtype_from(t.at("dtype")),
        t.at("bytes").get<std::size_t>(), role_from(t.at("role").get<std::string>()),
        t.at("input_path").get<std::string>(), t.at("output_path").get<std::string>(),
        t.value("shape", std::vector<std::int64_t>{}), t.value("checksum", std::string{}),
        Tolerance{t.value("atol", 0.0), t.value("rtol", 0.0)},
        t.value("expected_path", std::string{}), t.value("secret_input_path", std::string{}),
        t.value("secret_expected_path", std::string{}),
        draw_from(t.value("draw", json()), dtype_from(t.at("dtype"))),
        draw_from(t.value("secret_draw", json()), dtype_from(t.at("dtype")))});
  return job;
}

json to_json(const BenchJob& job) {
  json variants = json::array();
  for (const auto& v : job.variants) variants.push_back(to_json(v));
  return {{"variants", variants}, {"options", to_json(job.options)}};
}

json to_json(const RunResult& r) {
  json outputs = json::object();
  for (const auto& [name, s] : r.outputs) outputs[name] = to_json(s);
  json compared = json::object();
  for (const auto& [name, c] : r.compared) compared[name] = to_json(c);
  json exact_error = json::object();
  for (const auto& [name, e] : r.exact_error) exact_error[name] = json_number(e);
  return json{{"kept", r.kept},
              {"exact_error", exact_error},
              {"compared", compared},
              {"compared_how", r.compared_how},
              {"status", run_status_name(r.status)},
              {"error", r.error},
              {"fatal", r.fatal},
              {"environment", r.environment},
              {"input_checksums", r.input_checksums},
              {"resources", r.resources},
              {"kernel_ms", r.kernel_ms},
              {"reference_atol", r.reference_atol},
              {"reference_rtol", r.reference_rtol},
              {"outputs", outputs}};
}

RunResult run_result_from_json(const json& j) {
  RunResult r;
  std::string status = j.at("status").get<std::string>();
  auto parsed = parse_run_status(status);
  if (!parsed) throw std::invalid_argument("unknown run status " + status);
  r.status = *parsed;
  r.error = j.value("error", std::string{});
  r.fatal = j.value("fatal", false);
  r.environment = j.value("environment", false);
  r.input_checksums = j.value("input_checksums", std::map<std::string, std::string>{});
  if (j.contains("resources")) r.resources = j["resources"].get<ResourceUsage>();
  r.kernel_ms = j.value("kernel_ms", 0.0);
  r.reference_atol = j.value("reference_atol", -1.0);
  r.reference_rtol = j.value("reference_rtol", -1.0);
  if (j.contains("outputs"))
    for (const auto& [name, s] : j.at("outputs").items())
      r.outputs[name] = output_summary_from_json(s);
  r.kept = j.value("kept", false);
  if (j.contains("exact_error"))
    for (const auto& [name, e] : j.at("exact_error").items()) r.exact_error[name] = json_double(e);
  if (j.contains("compared"))
    for (const auto& [name, c] : j.at("compared").items())
      r.compared[name] = device_comparison_from_json(c);
  r.compared_how = j.value("compared_how", std::string{});
  return r;
}

}  // namespace kopt
