#include "kopt/store/run_state.hpp"

#include <algorithm>
#include <cmath>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EvaluationRecord, key, kernel, point, status,
                                                median_s, noise, samples, error, recorded_at,
                                                clocks, flags, device)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VersionRecord, index, iteration, kernel, point,
                                                source, evaluation, median_s, noise, before_s,
                                                bottleneck, evidence, hypothesis, agent_hypothesis,
                                                predictions, methods, method_outcomes,
                                                attribution_ms, attribution_pct, outcome, verdict,
                                                ratio, note, flags, sanitizer, cross_check,
                                                git_commit, masked, mask_reason)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BranchRecord, id, kernel, source, point, methods,
                                                ablates, hypothesis, expect)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(OpenIteration, index, draft, budget, suggestions,
                                                advice, metrics, branches, pitfalls)

std::optional<double> VersionRecord::gain() const {
  if (median_s <= 0) return std::nullopt;
  if (before_s > 0) return before_s / median_s;
  if (ratio > 0) return 1 / ratio;
  return std::nullopt;
}

std::optional<double> VersionRecord::method_factor(const std::string& method) const {
  auto a = attribution_ms.find(method);
  if (a == attribution_ms.end() || median_s <= 0) return std::nullopt;
  double without = median_s + a->second * 1e-3;
  if (without <= 0) return std::nullopt;
  return without / median_s;
}

std::optional<double> VersionRecord::log_share_pct(const std::string& method) const {
  auto g = gain();
  auto f = method_factor(method);
  if (!g || !f || *g <= 1) return std::nullopt;
  return 100 * std::log(*f) / std::log(*g);
}

const VersionRecord* RunState::champion() const {
  for (auto it = versions.rbegin(); it != versions.rend(); ++it)
    if (!it->masked &&
        (it->outcome == VersionOutcome::accepted || it->outcome == VersionOutcome::baseline))
      return &*it;
  return nullptr;
}

std::map<std::string, MethodOutcome> RunState::method_history() const {
  std::map<std::string, MethodOutcome> out;
  for (const auto& v : versions)
    if (!v.masked)
      for (const auto& [m, o] : v.method_outcomes) out[m] = o;
  return out;
}

const EvaluationRecord* RunState::find_evaluation(const std::string& key) const {
  auto it = evaluations.find(key);
  return it == evaluations.end() ? nullptr : &it->second;
}

json to_json(const RunState& s) {
  json evals = json::object();
  for (const auto& [k, e] : s.evaluations) evals[k] = e;
  return {{"schema_version", s.schema_version},
          {"problem", s.problem},
          {"problem_dir", s.problem_dir},
          {"device", s.device},
          {"created_at", s.created_at},
          {"dims", s.dims},
          {"status", s.status},
          {"stop_reason", s.stop_reason},
          {"git_error", s.git_error},
          {"iteration", s.iteration},
          {"no_improvement", s.no_improvement},
          {"versions", s.versions},
          {"evaluations", evals},
          {"open", s.open ? json(*s.open) : json(nullptr)},
          {"reference", s.reference ? json(*s.reference) : json(nullptr)},
          {"baselines", s.baselines},
          {"searched_spaces", s.searched_spaces},
          {"exhausted_spaces", s.exhausted_spaces},
          {"target", s.target}};
}

Expected<RunState> run_state_from_json(const std::string& text, const std::string& file) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Unexpected(
        bad_input(std::string("not valid JSON (a damaged run state?): ") + e.what(), file));
  }
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number_integer())
    return Unexpected(
        bad_input("no schema_version: not a kopt run state", file, 0, "schema_version"));
  int version = j["schema_version"].get<int>();
  if (version > k_run_schema_version)
    return Unexpected(bad_input(
        "written by a newer kopt (schema " + std::to_string(version) + "; this kopt reads up to " +
            std::to_string(k_run_schema_version) + "): upgrade kopt to continue this run",
        file, 0, "schema_version"));
  try {
    RunState s;
    s.schema_version = version;
    s.problem = j.at("problem").get<std::string>();
    s.problem_dir = j.value("problem_dir", "");
    s.device = j.value("device", "");
    s.created_at = j.value("created_at", "");
    s.dims = j.value("dims", std::map<std::string, std::int64_t>{});
    s.status = j.value("status", RunPhase::running);
    s.stop_reason = j.value("stop_reason", "");
    s.git_error = j.value("git_error", "");
    s.iteration = j.value("iteration", 0);
    s.no_improvement = j.value("no_improvement", 0);
    s.versions = j.value("versions", std::vector<VersionRecord>{});
    if (auto o = j.find("open"); o != j.end() && o->is_object()) s.open = o->get<OpenIteration>();
    if (auto r = j.find("reference"); r != j.end() && r->is_object())
      s.reference = r->get<EvaluationRecord>();
    s.baselines = j.value("baselines", std::vector<EvaluationRecord>{});
    s.searched_spaces = j.value("searched_spaces", std::vector<std::string>{});
    s.exhausted_spaces = j.value("exhausted_spaces", std::vector<std::string>{});
    if (auto t = j.find("target"); t != j.end()) s.target = *t;
    if (auto it = j.find("evaluations"); it != j.end() && it->is_object())
      for (auto e = it->begin(); e != it->end(); ++e)
        s.evaluations[e.key()] = e.value().get<EvaluationRecord>();
    for (std::size_t i = 0; i < s.versions.size(); ++i)
      if (s.versions[i].index != static_cast<int>(i))
        return Unexpected(bad_input("versions out of order: entry " + std::to_string(i) + " is v" +
                                        std::to_string(s.versions[i].index),
                                    file, 0, "versions[" + std::to_string(i) + "].index"));
    return s;
  } catch (const json::exception& e) {
    return Unexpected(bad_input(std::string("damaged run state: ") + e.what(), file));
  }
}

fs::path run_state_path(const fs::path& run_dir) {
  return run_dir / "run.json";
}

Expected<RunState> load_run_state(const fs::path& run_dir) {
  fs::path p = run_state_path(run_dir);
  auto text = read_text_file(p);
  if (!text)
    return Unexpected(bad_input("no run here (" + p.string() + " is missing)", p.string()));
  return run_state_from_json(*text, p.string());
}

Expected<void> save_run_state(const fs::path& run_dir, const RunState& s) {
  return write_text_atomic(run_state_path(run_dir), to_json(s).dump(2) + "\n");
}

Expected<void> set_masked(RunState& s, const std::vector<int>& versions, bool masked,
                          const std::string& reason) {
  for (int v : versions)
    if (v < 0 || v >= static_cast<int>(s.versions.size()))
      return Unexpected(bad_input("no version v" + std::to_string(v) +
                                  " in this run (it has v0..v" +
                                  std::to_string(static_cast<int>(s.versions.size()) - 1) + ")"));
  for (int v : versions) {
    s.versions[static_cast<std::size_t>(v)].masked = masked;
    s.versions[static_cast<std::size_t>(v)].mask_reason = masked ? reason : "";
  }
  return {};
}

}  // namespace kopt
