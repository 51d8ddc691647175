#include "kopt/report/run_report.hpp"

#include "kopt/core/fs.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<double> RunReport::speedup() const {
  if (!baseline || !best || best->median_s <= 0) return std::nullopt;
  return baseline->median_s / best->median_s;
}

std::optional<double> RunReport::pct_of_roof(const VersionRecord& v) const {
  if (!roof || roof->rate <= 0 || v.median_s <= 0) return std::nullopt;
  std::optional<double> work = roof->unit == "FLOP/s" ? flops : bytes;
  if (!work || *work <= 0) return std::nullopt;
  return 100.0 * *work / v.median_s / roof->rate;
}

std::string RunReport::title() const {
  return state ? state->problem : dir.filename().string();
}

namespace {

std::optional<RoofUse> roof_from(const json& t, const char* key, const char* unit) {
  if (!t.is_object() || !t.contains(key) || !t[key].is_object()) return std::nullopt;
  const json& r = t[key];
  return RoofUse{r.value("name", ""), r.value("origin", ""), r.value("source", ""),
                 r.value("rate", 0.0), unit};
}

// The "## Hypothesis" paragraph of hypothesis.md.
std::string hypothesis_paragraph(const std::string& md) {
  auto at = md.find("## Hypothesis");
  if (at == std::string::npos) return {};
  auto start = md.find('\n', at);
  auto end = md.find("\n## ", start);
  std::string p = md.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!p.empty() && (p.front() == '\n' || p.front() == ' ')) p.erase(p.begin());
  while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
  return p;
}

}  // namespace

RunReport load_run_report(const fs::path& run_dir) {
  RunReport r;
  r.dir = run_dir;
  auto s = load_run_state(run_dir);
  if (!s) {
    r.gaps.push_back("run.json cannot be read: " + s.error().to_string());
    return r;
  }
  r.state = *s;
  const RunState& st = *r.state;
  for (const auto& v : st.versions) {
    VersionView view;
    view.record = v;
    fs::path dir = run_dir / ("v" + std::to_string(v.index));
    if (auto sj = read_text_file(dir / "sass.json")) {
      try {
        json parsed = json::parse(*sj);
        for (auto it = parsed.begin(); it != parsed.end(); ++it)
          view.sass[it.key()] = it.value().get<std::string>();
      } catch (const std::exception&) {
        r.gaps.push_back("v" + std::to_string(v.index) + "/sass.json is damaged");
      }
    }
    if (v.index > 0) {
      if (auto h = read_text_file(dir / "hypothesis.md"))
        view.hypothesis = hypothesis_paragraph(*h);
      else
        r.gaps.push_back("v" + std::to_string(v.index) + "/hypothesis.md is missing");
    }
    if (v.masked)
      r.gaps.push_back("v" + std::to_string(v.index) + " is masked (" + v.mask_reason +
                       "): shown, not counted");
    r.versions.push_back(std::move(view));
  }
  for (const auto& v : st.versions)
    if (v.outcome == VersionOutcome::baseline && !v.masked) r.baseline = &v;
  r.best = st.champion();
  if (!r.baseline) r.gaps.push_back("no baseline version (v0 missing or masked)");
  if (!r.best || r.best == r.baseline)
    r.gaps.push_back(r.best ? "no version improved on the baseline" : "no successful version");
  const json& t = st.target;
  if (t.is_object() && !t.empty()) {
    if (t.contains("flops") && t["flops"].is_number()) r.flops = t["flops"].get<double>();
    if (t.contains("bytes") && t["bytes"].is_number()) r.bytes = t["bytes"].get<double>();
    r.bound = t.value("bound", "");
    r.compute_roof = roof_from(t, "compute_roof", "FLOP/s");
    r.memory_roof = roof_from(t, "memory_roof", "B/s");
    r.roof = r.bound == "compute" ? r.compute_roof : r.memory_roof;
    if (!r.roof)
      r.gaps.push_back("the target names no " +
                       (r.bound.empty() ? std::string("usable") : r.bound) + " roof");
  } else {
    r.gaps.push_back("no target recorded (no roofs): % of the ceiling is unknown");
  }
  if (!st.reference && st.baselines.empty())
    r.gaps.push_back(
        "the reference implementation was not timed in this run (a C++ reference runs on the CPU)");
  return r;
}

}  // namespace kopt
