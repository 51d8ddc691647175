#include "kopt/engine/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "kopt/analysis/advice.hpp"
#include "kopt/analysis/method_selection.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/iteration_notes.hpp"
#include "kopt/engine/sanitize.hpp"
#include "kopt/engine/search/search_space.hpp"
#include "kopt/measure/review.hpp"
#include "kopt/report/explanation_markdown.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

std::string Variant::label() const {
  return kernel + (point.empty() ? "" : " " + point_to_string(point)) + (source.empty() ? "" : " [" + source + "]");
}

const KernelSpec* method_kernel(const Problem& problem) {
  for (const auto& k : problem.kernels)
    if (!k.methods.empty()) return &k;
  return nullptr;
}

namespace {

bool applies(const ParamPoint& p, const std::map<std::string, std::int64_t>& assignments) {
  for (const auto& [k, v] : assignments)
    if (auto it = p.find(k); it == p.end() || it->second != v) return false;
  return true;
}

ParamPoint with(ParamPoint p, const std::map<std::string, std::int64_t>& assignments) {
  for (const auto& [k, v] : assignments) p[k] = v;
  return p;
}

class Optimizer {
 public:
  Optimizer(const Problem& p, const MethodCatalog& c, const OptimizeOptions& o, Lab& lab, GitRepo* git)
      : m_p(p), m_catalog(c), m_o(o), m_lab(lab), m_git(git), m_mk(method_kernel(p)) {}

  Expected<RunState> run() {
    if (auto r = open(); !r) return Unexpected(r.error());
    if (m_state.versions.empty())
      if (auto r = baseline(); !r) return Unexpected(r.error());
    while (m_state.status == "running") {
      if (m_state.iteration >= m_o.iterations) {
        finish("iteration limit (" + std::to_string(m_o.iterations) + ")");
        break;
      }
      if (auto r = iterate(m_state.iteration + 1); !r) return Unexpected(r.error());
    }
    return m_state;
  }

 private:
  // --- the run directory -------------------------------------------------------------------
  Expected<void> open() {
    std::error_code ec;
    bool exists = fs::exists(run_state_path(m_o.run_dir), ec);
    if (exists && !m_o.resume)
      return Unexpected(bad_input("a run already exists in " + m_o.run_dir.string() +
                                  ": continue it with --resume, or choose another --run directory"));
    if (exists) {
      auto s = load_run_state(m_o.run_dir);
      if (!s) return Unexpected(s.error());
      if (s->problem != m_p.name)
        return Unexpected(bad_input("the run in " + m_o.run_dir.string() + " is of problem '" + s->problem + "', not '" +
                                    m_p.name + "'"));
      m_state = *s;
      if (m_state.status == "finished" && m_state.iteration < m_o.iterations) {
        m_state.status = "running";  // asked for more iterations than the run had
        m_state.stop_reason.clear();
      }
      m_o.log(fmt::format("resuming {} at iteration {} ({} measurements recorded)", m_o.run_dir.string(),
                          m_state.iteration + 1, m_state.evaluations.size()));
    } else {
      fs::create_directories(m_o.run_dir, ec);
      if (ec) return Unexpected(bad_input("cannot create " + m_o.run_dir.string() + ": " + ec.message()));
      m_state.problem = m_p.name;
      m_state.problem_dir = fs::absolute(m_p.dir).string();
      m_state.device = m_lab.device_name();
      m_state.created_at = utc_timestamp();
      (void)write_text_atomic(m_o.run_dir / "env.json", m_lab.environment().dump(2) + "\n");
      if (auto t = m_lab.target_record()) {
        m_state.target = t->json;
        (void)write_text_atomic(m_o.run_dir / "target.md", t->markdown);
      }
    }
    if (m_git)
      if (auto r = m_git->init(); !r) m_o.log("no git history: " + r.error().message);
    return save();
  }

  Expected<void> save() { return save_run_state(m_o.run_dir, m_state); }

  void commit(const std::string& message, VersionRecord* record) {
    if (!m_git) return;
    auto c = m_git->commit_all(message);
    if (c && record) record->git_commit = *c;
    if (!c) m_o.log("git: " + c.error().message);
  }

  void finish(const std::string& reason) {
    m_state.status = "finished";
    m_state.stop_reason = reason;
    (void)save();
    commit("finished: " + reason, nullptr);
    m_o.log("stop: " + reason);
  }

  fs::path version_dir(int i) const { return m_o.run_dir / ("v" + std::to_string(i)); }

  // --- measurements, each recorded the moment it completes ---------------------------------
  static EvaluationRecord record(const std::string& key, const std::string& kernel, const ParamPoint& point,
                                 const Measured& m) {
    return EvaluationRecord{key,     kernel,  point,           m.status, m.median_s, m.noise,
                            m.samples, m.error, utc_timestamp(), m.clocks, m.flags};
  }

  std::pair<std::string, Measured> measure(const Variant& v) {
    auto key = m_lab.evaluation_key(v);
    if (!key) return {"", Measured{"compile_failed", 0, 0, 0, key.error().message}};
    if (const EvaluationRecord* e = m_state.find_evaluation(*key))
      return {*key, Measured{e->status, e->median_s, e->noise, e->samples, e->error, e->clocks, e->flags}};
    Measured m = m_lab.measure(v);
    m_state.evaluations[*key] = record(*key, v.kernel, v.point, m);
    (void)save();
    m_o.log(fmt::format("  {:<40} {}", v.label(), m.ok() ? human_time(m.median_s) : m.status + ": " + m.error));
    for (const auto& f : m.flags) m_o.log("    flagged: " + f);
    return {*key, m};
  }

  void write_variant_files(const fs::path& dir, const Variant& v, const Measured& m) {
    fs::create_directories(dir);
    const KernelSpec* k = m_p.find_kernel(v.kernel);
    std::string name = k ? k->source.filename().string() : "kernel.cu";
    (void)write_text_atomic(dir / name, m_lab.source_text(v));
    (void)write_text_atomic(dir / "params.json", json{{"kernel", v.kernel}, {"params", v.point}}.dump(2));
    (void)write_text_atomic(dir / "bench.json", json{{"status", m.status}, {"median_s", m.median_s}, {"noise", m.noise},
                                                     {"samples", m.samples}, {"error", m.error}, {"flags", m.flags}}
                                                    .dump(2));
  }

  Expected<void> baseline() {
    std::string kernel = m_o.start_kernel;
    if (kernel.empty()) {
      for (const auto& k : m_p.kernels)
        if (k.methods.empty() && kernel.empty()) kernel = k.name;
      if (kernel.empty()) kernel = m_p.kernels.front().name;
    }
    const KernelSpec* k = m_p.find_kernel(kernel);
    if (!k) return Unexpected(bad_input("--start-kernel " + kernel + ": no such kernel"));
    auto point = default_point(m_p, *k);
    if (!point) return Unexpected(point.error());
    Variant v{kernel, *point};
    m_o.log("v0: measuring the baseline " + v.label());
    auto [key, m] = measure(v);
    if (!m.ok())
      return Unexpected(bad_input("the starting kernel " + v.label() + " fails (" + m.status + ": " + m.error +
                                  "): nothing to optimize from"));
    VersionRecord r;
    r.index = 0;
    r.kernel = v.kernel;
    r.point = v.point;
    r.evaluation = key;
    r.median_s = m.median_s;
    r.noise = m.noise;
    r.flags = m.flags;  // the baseline is where the run starts, flagged or not: the flags stay on record
    r.outcome = "baseline";
    write_variant_files(version_dir(0), v, m);
    if (auto ref = m_lab.measure_reference()) m_state.reference = record("reference", "reference", {}, *ref);
    for (const auto& [name, b] : m_lab.measure_baselines()) m_state.baselines.push_back(record(name, name, {}, b));
    m_state.versions.push_back(r);
    commit("v0: baseline " + v.label() + ", " + human_time(m.median_s), &m_state.versions.back());
    return save();
  }

  // --- one iteration -------------------------------------------------------------------------
  struct Opened {
    Variant champ;
    double champ_time = 0;
    VersionRecord rec;  // bottleneck, evidence, hypothesis, methods
  };

  // Profile, budget, methods, hypothesis. nullopt when the run stopped instead (target,
  // near peak, no profile).
  Expected<std::optional<Opened>> begin_iteration(int i) {
    const VersionRecord* champ_rec = m_state.champion();
    if (!champ_rec) return Unexpected(bad_input("every version of this run is masked: unmask one to continue"));
    Opened o;
    o.champ = Variant{champ_rec->kernel, champ_rec->point, champ_rec->source};
    o.champ_time = champ_rec->median_s;
    fs::path dir = version_dir(i);
    m_o.log(fmt::format("iteration {}: champion v{} {} at {}", i, champ_rec->index, o.champ.label(), human_time(o.champ_time)));
    if (auto t = m_lab.target_time(); t && o.champ_time <= *t) {
      finish(fmt::format("target met ({} <= {}, 90 % of the roof)", human_time(o.champ_time), human_time(*t)));
      return std::optional<Opened>{};
    }
    fs::create_directories(dir);
    auto expl = m_lab.profile(o.champ, dir / "profile");
    if (!expl) {
      finish("cannot profile the champion: " + expl.error().message);
      return std::optional<Opened>{};
    }
    // The champion's time as kopt measured it against ncu's for the same build.
    if (expl->time_source.rfind("ncu", 0) == 0)
      if (auto note = review_against_ncu(o.champ_time, expl->time_s)) {
        o.rec.cross_check = *note;
        m_o.log("    review: " + *note);
      }
    if (expl->gaps.near_peak) {
      finish("near_peak: Δc, Δm and Δl all below 0.15");
      return std::optional<Opened>{};
    }
    m_ctx = selection(*expl, o.champ);
    m_experience_notes = consult_experience(std::string(bottleneck_name(expl->bottleneck.cls)));
    // No gap at all means no counters (OpenCL): no trigger can fire, so untried methods go blind.
    bool counters = expl->gaps.compute || expl->gaps.memory || expl->gaps.latency;
    m_advice = advice_for(*expl, o.champ, o.champ_time);
    if (m_advice.headroom.bounding) {  // on the roofline: by counters, or by the cost formulas alone
      m_ctx.budget = m_advice.budget;
      m_ctx.metrics = advice_metrics(*expl, m_advice.headroom);
      if (m_advice.headroom.at_roof && !m_agent) {
        finish("at_roof: " + m_advice.headroom.summary);
        return std::optional<Opened>{};
      }
      m_chosen.clear();
      for (const auto& sg : m_advice.suggestions)
        if (sg.within_budget)
          m_chosen.push_back({sg.method, sg.axis, m_catalog.find(sg.method)->priority, sg.strength.value_or(0), sg.why});
    } else {
      m_chosen = counters ? suggest_methods(m_ctx) : untriggered_candidates(m_ctx, 1);
    }
    m_open_metrics = m_ctx.metrics;
    m_open_metrics[k_time_metric] = o.champ_time;
    MethodSet set;
    for (const auto& c : m_chosen) set.methods.push_back(c.method);
    // The advice may rank a triggered method below another of its axis (the bottleneck rule
    // cites the other's trigger, or the list ran out): the validator hears why.
    for (const auto& sg : m_advice.suggestions)
      if (sg.triggered && !sg.within_budget)
        set.skip_reasons[sg.method] = fmt::format("ranked #{} in the open's answer, below the budget's cut", sg.rank);
    for (const auto& m : m_catalog.methods)
      if (auto st = method_strength(m, m_ctx.metrics);
          m_advice.headroom.bounding && st && *st >= k_triggered && !set.skip_reasons.contains(m.id))
        set.skip_reasons[m.id] = "not in the first " + std::to_string(m_advice.suggestions.size()) + " of the open's answer";
    if (auto issues = validate_methods(m_ctx, set); !issues.empty())
      return Unexpected(internal_error("the loop chose a method set its validator rejects: " + issues[0].message));
    (void)write_text_atomic(dir / "hypothesis.md", hypothesis(i, *expl, m_ctx, m_chosen, o.champ, o.champ_time));
    o.rec.index = i;
    o.rec.iteration = i;
    o.rec.bottleneck = std::string(bottleneck_name(expl->bottleneck.cls));
    o.rec.evidence.push_back(expl->bottleneck.rule);
    for (const auto& e : expl->bottleneck.evidence) o.rec.evidence.push_back(fmt::format("{} = {:.4g}", e.metric, e.value));
    if (m_advice.headroom.bounding) o.rec.evidence.push_back("headroom: " + m_advice.headroom.summary);
    o.rec.hypothesis = !set.methods.empty()       ? "turn on " + fmt::format("{}", fmt::join(set.methods, ", "))
                       : m_advice.headroom.at_roof ? "stop recommended: " + m_advice.stop_reason
                                                   : "tuning only: no method to suggest within the budget";
    o.rec.methods = set.methods;
    return std::optional<Opened>{o};
  }

  Expected<void> iterate(int i) {
    auto opened = begin_iteration(i);
    if (!opened) return Unexpected(opened.error());
    if (!*opened) return {};
    Opened& o = **opened;
    if (!m_o.proposer.empty()) return iterate_with_proposer(i, o);
    fs::path dir = version_dir(i);
    // Branches, retried with other tunings when all of them fail.
    std::optional<std::pair<Variant, Measured>> winner;
    std::string winner_key;
    for (int attempt = 0; attempt <= m_o.max_retries && !winner; ++attempt) {
      auto branches = make_branches(o.champ, o.rec.methods, i, attempt);
      if (branches.empty()) break;
      for (std::size_t b = 0; b < branches.size(); ++b) {
        auto [key, m] = measure(branches[b]);
        write_variant_files(dir / "branches" / ("b" + std::to_string(attempt) + "_" + std::to_string(b)), branches[b], m);
        if (m.ok() && (!winner || m.median_s < winner->second.median_s)) {
          winner = {branches[b], m};
          winner_key = key;
        }
      }
    }
    if (!winner) return record_failure(i, o, "every branch failed (after retries)");
    return decide(i, o, winner->first, winner->second, winner_key, nullptr);
  }

  // --- the proposer hook ------------------------------------------------------------------------
  static std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }

  Expected<void> iterate_with_proposer(int i, Opened& o) {
    fs::path dir = version_dir(i);
    fs::path proposal = dir / "proposal";
    fs::create_directories(proposal);
    json analysis{{"schema_version", 1},
                  {"iteration", i},
                  {"problem", m_p.name},
                  {"problem_dir", fs::absolute(m_p.dir).string()},
                  {"run_dir", m_o.run_dir.string()},
                  {"champion", {{"kernel", o.champ.kernel}, {"params", o.champ.point}, {"median_s", o.champ_time}}},
                  {"bottleneck", o.rec.bottleneck},
                  {"evidence", o.rec.evidence},
                  {"budget", m_ctx.budget.to_string()},
                  {"hypothesis_file", (dir / "hypothesis.md").string()},
                  {"profile_dir", (dir / "profile").string()}};
    if (m_advice.headroom.bounding || m_advice.stop) analysis["advice"] = to_json(m_advice);
    for (const auto& c : m_chosen)
      analysis["suggested_methods"].push_back({{"method", c.method}, {"axis", std::string(axis_name(c.axis))}, {"why", c.why}});
    for (const auto& k : m_p.kernels)
      analysis["kernels"].push_back({{"name", k.name}, {"source", (fs::absolute(m_p.dir) / k.source).string()}, {"entry", k.entry}});
    fs::path analysis_file = dir / "analysis.json";
    (void)write_text_atomic(analysis_file, analysis.dump(2));
    std::string script = "export KOPT_ANALYSIS=" + shell_quote(analysis_file.string()) +
                         " KOPT_PROPOSAL_DIR=" + shell_quote(proposal.string()) + " KOPT_RUN_DIR=" +
                         shell_quote(m_o.run_dir.string()) + " KOPT_ITERATION=" + std::to_string(i) +
                         " KOPT_PROBLEM_DIR=" + shell_quote(fs::absolute(m_p.dir).string()) + "; (" + m_o.proposer +
                         ") < \"$KOPT_ANALYSIS\"";
    SystemCommandRunner runner;
    m_o.log("iteration " + std::to_string(i) + ": asking the proposer");
    CommandResult r = runner.run({"/bin/sh", "-c", script},
                                 std::chrono::milliseconds(static_cast<long>(m_o.proposer_timeout_s * 1000)));
    auto tail = [](const std::string& s) { return s.size() > 4000 ? "...\n" + s.substr(s.size() - 4000) : s; };
    (void)write_text_atomic(dir / "proposer.log", tail(r.out) + "\n--- stderr ---\n" + tail(r.err));
    if (!r.ok())
      return record_failure(i, o, r.timed_out ? "the proposer timed out" : "the proposer failed: " + describe(r));
    auto branches = proposed_branches(proposal, o.champ);
    if (!branches) return record_failure(i, o, branches.error().message);
    if (branches->empty()) return record_failure(i, o, "the proposer wrote no kernel files");
    for (std::size_t k = 0; k < branches->size(); ++k) (*branches)[k].id = "p" + std::to_string(k + 1);
    Outcome out = measure_branches(*branches);
    judge_predictions(i, o.rec, *branches, out, m_open_metrics);
    if (!out.winner) return record_failure(i, o, "every proposed branch failed");
    o.rec.methods = out.methods;
    return decide(i, o, out.winner->first, out.winner->second, out.key, &out.ablations);
  }

  // Written branches measured: the fastest correct one (and the methods it claims), and the
  // leave-one-out ablations by the method they leave out.
  struct Outcome {
    std::optional<std::pair<Variant, Measured>> winner;
    std::string key;
    std::vector<std::string> methods;
    std::map<std::string, std::pair<Variant, Measured>> ablations;
    std::vector<Measured> measured;  // per branch, in order
    std::optional<std::size_t> winner_index;
  };
  Outcome measure_branches(const std::vector<BranchRecord>& branches) {
    Outcome out;
    for (std::size_t k = 0; k < branches.size(); ++k) {
      const BranchRecord& b = branches[k];
      Variant v{b.kernel, b.point, b.source};
      auto [key, m] = measure(v);
      out.measured.push_back(m);
      if (!b.ablates.empty()) {
        out.ablations[b.ablates] = {v, m};
        continue;
      }
      if (m.ok() && (!out.winner || m.median_s < out.winner->second.median_s)) {
        out.winner = {v, m};
        out.key = key;
        out.methods = b.methods;
        out.winner_index = k;
      }
    }
    return out;
  }

  // Every branch's predictions against what happened: `time` by each branch's median, the
  // other metrics on the candidate (the fastest branch), profiled once for them.
  void judge_predictions(int i, VersionRecord& rec, const std::vector<BranchRecord>& branches, const Outcome& out,
                         const MetricValues& before) {
    bool profile_needed = false;
    if (out.winner_index)
      for (const auto& p : branches[*out.winner_index].expect) profile_needed |= p.metric != k_time_metric;
    std::optional<MetricValues> after;
    std::string why;
    if (profile_needed) {
      const auto& [v, m] = *out.winner;
      auto e = m_lab.profile(v, version_dir(i) / "candidate-profile");
      if (e) {
        after = advice_metrics(*e, compute_headroom(*e, m.median_s));
        (*after)[k_time_metric] = m.median_s;
      } else {
        why = e.error().message;
      }
    }
    for (std::size_t k = 0; k < branches.size(); ++k)
      for (Prediction p : branches[k].expect) {
        p.branch = branches[k].id;
        const Measured& m = out.measured.at(k);
        bool candidate = out.winner_index && *out.winner_index == k;
        if (!m.ok()) leave_unjudged(p, "the branch did not measure: " + m.status);
        else if (p.metric == k_time_metric) judge_prediction(p, before, {{k_time_metric, m.median_s}});
        else if (!candidate) leave_unjudged(p, p.branch + " was not the fastest branch: only the candidate is profiled");
        else if (after) judge_prediction(p, before, *after);
        else leave_unjudged(p, "the candidate could not be profiled: " + why);
        m_o.log(fmt::format("    prediction {} {}: {}{}", p.branch, p.text, p.verdict, p.note.empty() ? "" : " (" + p.note + ")"));
        rec.predictions.push_back(p);
      }
    if (out.winner_index) rec.agent_hypothesis = branches[*out.winner_index].hypothesis;
    m_closing_branches = branches;
    m_candidate_branch = out.winner_index ? branches[*out.winner_index].id : "";
    if (!rec.predictions.empty() || std::any_of(branches.begin(), branches.end(), [](auto& b) { return !b.hypothesis.empty(); }))
      write_branch_hypotheses(version_dir(i) / "hypothesis.md", branches, rec.predictions,
                              out.winner_index ? branches[*out.winner_index].id : "");
  }

  static std::string describe(const CommandResult& r) {
    if (!r.started) return "could not start /bin/sh";
    return r.signal ? "signal " + std::to_string(r.signal) : "exit code " + std::to_string(r.exit_code);
  }

  // The proposal directory's kernel files, with branches.json when the proposer wrote one.
  Expected<std::vector<BranchRecord>> proposed_branches(const fs::path& dir, const Variant& champ) {
    std::vector<BranchRecord> out;
    std::string default_kernel = m_mk ? m_mk->name : champ.kernel;
    auto base_point = [&](const std::string& kernel) -> ParamPoint {
      if (kernel == champ.kernel) return champ.point;
      const KernelSpec* k = m_p.find_kernel(kernel);
      auto d = k ? default_point(m_p, *k) : Expected<ParamPoint>(ParamPoint{});
      return d ? *d : ParamPoint{};
    };
    fs::path manifest = dir / "branches.json";
    if (fs::exists(manifest)) {
      auto text = read_text_file(manifest);
      json j;
      try {
        j = json::parse(text.value_or(""));
      } catch (const std::exception& e) {
        return Unexpected(bad_input(std::string("branches.json is not JSON: ") + e.what(), manifest.string()));
      }
      if (!j.is_array()) return Unexpected(bad_input("branches.json must be an array", manifest.string()));
      for (const auto& e : j) {
        BranchRecord b;
        b.kernel = e.value("kernel", default_kernel);
        b.source = (dir / e.value("file", "")).string();
        b.point = base_point(b.kernel);
        if (e.contains("set") && e["set"].is_object())
          for (auto it = e["set"].begin(); it != e["set"].end(); ++it) b.point[it.key()] = it.value().get<std::int64_t>();
        b.methods = e.value("methods", std::vector<std::string>{});
        b.ablates = e.value("ablates", "");
        b.hypothesis = e.value("hypothesis", "");
        if (auto x = e.find("expect"); x != e.end()) {
          std::string field = fmt::format("branches.json[{}].expect", out.size());
          if (!x->is_array()) return Unexpected(bad_input("expected a list of METRIC:up|down[:AMOUNT]", manifest.string(), 0, field));
          for (const auto& t : *x) {
            auto p = t.is_string() ? parse_prediction(t.get<std::string>(), field)
                                   : Unexpected(bad_input("expected a string", manifest.string(), 0, field));
            if (!p) return Unexpected(bad_input(p.error().message, manifest.string(), 0, field));
            b.expect.push_back(*p);
          }
        }
        if (fs::is_regular_file(b.source) && m_p.find_kernel(b.kernel)) out.push_back(b);
      }
      return out;
    }
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().extension() == ".cu") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      BranchRecord b;
      b.kernel = default_kernel;
      b.source = f.string();
      b.point = base_point(b.kernel);
      out.push_back(b);
    }
    return out;
  }

  // A new champion is checked again with a secret seed beside seed 1 (a measurement checks
  // seed 1 only), then runs under compute-sanitizer: a wrong output or a finding rejects it; a
  // tool that could not check is recorded, and the champion stands.
  bool passes_champion_checks(VersionRecord& rec, const Variant& v) {
    ChampionCheck checked = m_lab.check_champion(v);
    if (checked.wrong) {
      rec.note = "checked again before it became champion, it was " + *checked.wrong;
      m_o.log("    " + rec.note);
      return false;
    }
    const std::vector<SanitizerOutcome>& outcomes = checked.sanitizer;
    if (outcomes.empty()) return true;
    std::string verdict = sanitizer_verdict(outcomes);
    rec.sanitizer = verdict + ": " + sanitizer_summary(outcomes);
    m_o.log("    compute-sanitizer: " + rec.sanitizer);
    if (verdict != "findings") return true;
    rec.note = "compute-sanitizer found errors in a candidate faster than the champion: " + sanitizer_summary(outcomes);
    return false;
  }

  Expected<void> record_failure(int i, Opened& o, const std::string& why) {
    o.rec.kernel = o.champ.kernel;
    o.rec.point = o.champ.point;
    o.rec.source = o.champ.source;
    o.rec.outcome = "failed";
    o.rec.note = why;
    for (const auto& m : o.rec.methods) o.rec.method_outcomes[m] = "implementation_failed";
    return close_iteration(i, o.rec, false);
  }

  // The winner against the champion, SASS, attribution, record. `ablations` are an agent's
  // leave-one-out branches (method -> measured variant); null: switch the toggles off.
  Expected<void> decide(int i, Opened& o, const Variant& wv, const Measured& wm, const std::string& key,
                        const std::map<std::string, std::pair<Variant, Measured>>* ablations) {
    VersionRecord& rec = o.rec;
    rec.kernel = wv.kernel;
    rec.point = wv.point;
    rec.source = wv.source;
    rec.evaluation = key;
    rec.median_s = wm.median_s;
    rec.noise = wm.noise;
    rec.flags = wm.flags;
    bool accepted = false;
    if (wv == o.champ) {
      rec.note = "the best branch is the champion itself";
    } else if (!wm.flags.empty()) {
      // A series of two clusters or a far-fast tail is what a kernel that skips work on some
      // launches produces: such a time is not accepted as a champion's.
      rec.note = "flagged: " + wm.flags.front() +
                 (wm.flags.size() > 1 ? " (and " + std::to_string(wm.flags.size() - 1) + " more flag(s))" : "") +
                 ": a flagged timing is not accepted as the champion; look at its samples (kopt bench --json)";
    } else {
      auto cmp = m_lab.compare(wv, o.champ);
      if (cmp) {
        rec.verdict = std::string(verdict_name(cmp->verdict));
        rec.ratio = cmp->ratio;
        accepted = cmp->verdict == Verdict::faster;
        if (!accepted)
          rec.note = fmt::format("not faster than the champion outside the noise (ratio {:.4f}, {})", cmp->ratio, rec.verdict);
        else accepted = passes_champion_checks(rec, wv);
      } else {
        rec.note = "comparison failed: " + cmp.error().message;
      }
    }
    fs::path dir = version_dir(i);
    if (ablations) attribute_agent(rec, wv, wm, *ablations, accepted, dir);
    else attribute(rec, wv, wm, rec.methods, dir);
    if (double gain = o.champ_time - wm.median_s; gain > 0)
      for (const auto& [m, ms] : rec.attribution_ms) rec.attribution_pct[m] = 100.0 * ms * 1e-3 / gain;
    rec.outcome = accepted ? "accepted" : "rejected";
    write_variant_files(dir, wv, wm);
    return close_iteration(i, rec, accepted);
  }

 public:
  // --- agent-driven mode ----------------------------------------------------------------------
  Expected<RunState> agent_open() {
    m_agent = true;
    if (auto r = open(); !r) return Unexpected(r.error());
    if (m_state.versions.empty())
      if (auto r = baseline(); !r) return Unexpected(r.error());
    if (m_state.open)
      return Unexpected(bad_input(fmt::format("iteration {} is open: add branches (kopt iter branch) and close it "
                                              "(kopt iter close) first",
                                              m_state.open->index)));
    if (m_state.status == "finished") return Unexpected(bad_input("the run is finished (" + m_state.stop_reason + ")"));
    int i = m_state.iteration + 1;
    auto opened = begin_iteration(i);
    if (!opened) return Unexpected(opened.error());
    if (!*opened) return m_state;
    OpenIteration it;
    it.index = i;
    it.draft = (*opened)->rec;
    it.budget = m_ctx.budget.to_string();
    if (m_advice.headroom.bounding || m_advice.stop) {
      it.advice = to_json(m_advice);
      if (m_advice.stop) it.suggestions.push_back("stop recommended: " + m_advice.stop_reason);
      for (const auto& sg : m_advice.suggestions)
        it.suggestions.push_back(fmt::format("{}. {} ({}{}): {}; expect {}", sg.rank, sg.method, axis_name(sg.axis),
                                             sg.triggered ? ", triggered" : "", sg.why, sg.expect()));
    } else {
      for (const auto& c : m_chosen) it.suggestions.push_back(c.method + ": " + c.why);
    }
    for (const auto& [name, v] : m_open_metrics)
      if (std::isfinite(v)) it.metrics[name] = v;
    fs::create_directories(version_dir(i) / "branches");
    m_state.open = it;
    if (auto s = save(); !s) return Unexpected(s.error());
    return m_state;
  }

  Expected<RunState> agent_branch(const BranchRecord& given, const std::filesystem::path& file) {
    if (auto r = open_existing(); !r) return Unexpected(r.error());
    if (!m_state.open) return Unexpected(bad_input("no open iteration: kopt iter open first"));
    BranchRecord b = given;
    if (b.kernel.empty()) b.kernel = m_mk ? m_mk->name : m_state.champion()->kernel;
    const KernelSpec* k = m_p.find_kernel(b.kernel);
    if (!k) return Unexpected(bad_input("--kernel " + b.kernel + ": no such kernel", m_p.spec_path.string()));
    for (const auto& m : b.methods)
      if (!m_catalog.find(m)) return Unexpected(bad_input("--method " + m + ": not in the method catalog", "", 0, "--method"));
    if (!b.ablates.empty() && !m_catalog.find(b.ablates))
      return Unexpected(bad_input("--ablates " + b.ablates + ": not in the method catalog", "", 0, "--ablates"));
    auto text = read_text_file(file);
    if (!text) return Unexpected(bad_input("cannot read the branch: " + text.error().message, file.string()));
    // The branch is in the backend's language, and holds the kernel's entry.
    auto lang = kernel_language_of(file);
    if (lang && *lang != m_p.language)
      return Unexpected(bad_input("a " + std::string(kernel_language_name(*lang)) + " branch, but this run builds " +
                                      std::string(kernel_language_name(m_p.language)) + " kernels",
                                  file.string(), 1));
    const char* qualifier = m_p.language == KernelLanguage::opencl ? "__kernel" : "__global__";
    if (text->find(qualifier) == std::string::npos || text->find(k->entry) == std::string::npos)
      return Unexpected(bad_input("not a kernel of '" + k->name + "': no " + qualifier + " function named " + k->entry,
                                  file.string(), 1));
    auto point = resolve_point(m_p, *k, {b.point.begin(), b.point.end()});
    if (!point) return Unexpected(point.error());
    b.point = *point;
    b.id = "a" + std::to_string(m_state.open->branches.size() + 1);
    for (auto& p : b.expect) {
      if (auto why = unknown_metric(p, m_state.open->metrics)) return Unexpected(bad_input(*why, "", 0, "--expect"));
      p.branch = b.id;
    }
    fs::path dir = version_dir(m_state.open->index) / "branches" / b.id;
    fs::path copy = dir / k->source.filename();
    if (auto w = write_text_atomic(copy, *text); !w) return Unexpected(w.error());
    b.source = copy.string();
    m_state.open->branches.push_back(b);
    if (auto s = save(); !s) return Unexpected(s.error());
    return m_state;
  }

  Expected<RunState> agent_close() {
    if (auto r = open_existing(); !r) return Unexpected(r.error());
    if (!m_state.open) return Unexpected(bad_input("no open iteration: kopt iter open first"));
    OpenIteration it = *m_state.open;
    int candidates = 0;
    for (const auto& b : it.branches) candidates += b.ablates.empty();
    if (candidates == 0) return Unexpected(bad_input("no branch to evaluate: kopt iter branch RUN --file KERNEL.cu"));
    const VersionRecord* champ_rec = m_state.champion();
    if (!champ_rec) return Unexpected(bad_input("every version of this run is masked: unmask one to continue"));
    Opened o;
    o.champ = Variant{champ_rec->kernel, champ_rec->point, champ_rec->source};
    o.champ_time = champ_rec->median_s;
    o.rec = it.draft;
    Outcome out = measure_branches(it.branches);
    judge_predictions(it.index, o.rec, it.branches, out, it.metrics);
    o.rec.methods = out.winner ? out.methods : std::vector<std::string>{};
    m_state.open.reset();
    Expected<void> done = out.winner ? decide(it.index, o, out.winner->first, out.winner->second, out.key, &out.ablations)
                                     : record_failure(it.index, o,
                                                      out.ablations.empty() ? "every branch failed"
                                                                            : "every branch failed; the ablations were not "
                                                                              "attributed: no branch measured to compare with");
    if (!done) return Unexpected(done.error());
    return m_state;
  }

  Expected<RunState> agent_finalize() {
    if (auto r = open_existing(); !r) return Unexpected(r.error());
    if (m_state.status != "finished") finish(m_state.open ? "finalized with iteration " + std::to_string(m_state.open->index) +
                                                               " left open"
                                                         : "finalized");
    return m_state;
  }

 private:
  Expected<void> open_existing() {
    if (!std::filesystem::exists(run_state_path(m_o.run_dir)))
      return Unexpected(bad_input("no run in " + m_o.run_dir.string() + ": kopt iter open PROBLEM --run DIR starts one"));
    m_o.resume = true;
    return open();
  }

  // An agent's attribution: each claimed method of the winner against the branch that
  // leaves it out; without such a branch a method is classified only by its SASS.
  void attribute_agent(VersionRecord& rec, const Variant& wv, const Measured& wm,
                       const std::map<std::string, std::pair<Variant, Measured>>& ablations, bool accepted,
                       const fs::path& dir) {
    auto sass = verify_in_sass(wv, rec.methods, dir);
    std::vector<std::string> unattributed;
    // Every ablation submitted is timed against the candidate, accepted or not, whatever the
    // SASS says: the time is evidence an agent learns from.
    for (const auto& [m, ablation] : ablations)
      if (ablation.second.ok()) attribute_one(rec, m, wm, ablation.second);
    for (const auto& m : rec.methods) {
      auto verdict = sass.find(m);
      if (verdict != sass.end() && verdict->second == SassVerdictKind::missing) {
        rec.method_outcomes[m] = "implementation_failed";
        continue;
      }
      auto a = ablations.find(m);
      if (a != ablations.end() && a->second.second.ok()) continue;  // attributed above
      {
        if (!accepted) rec.method_outcomes[m] = "ineffective";
        else if (rec.methods.size() == 1) rec.method_outcomes[m] = "effective";
        else unattributed.push_back(m);
      }
    }
    if (!unattributed.empty())
      rec.note += (rec.note.empty() ? "" : "; ") +
                  fmt::format("not attributed (add a branch --ablates M for each): {}", fmt::join(unattributed, ", "));
  }

 public:
  // Past outcomes for this family, chip and bottleneck: a preference that breaks ties, and
  // methods that failed repeatedly here are left out. Returns what to say in the hypothesis.
  std::vector<std::string> consult_experience(const std::string& bottleneck) {
    std::vector<std::string> notes;
    if (!m_o.experience) return notes;
    auto recs = m_o.experience->recommend(family(), chip(), bottleneck);
    if (!recs) {
      notes.push_back("the experience DB could not be read: " + recs.error().message);
      return notes;
    }
    for (const auto& r : *recs) {
      m_ctx.preference[r.method] = r.score;
      if (r.demoted && m_ctx.available && m_ctx.available->erase(r.method))
        notes.push_back(r.method + " left out: " + r.evidence);
    }
    return notes;
  }

  std::string chip() { return "sm_" + std::to_string(m_lab.sm()); }
  std::string family() const { return m_p.family.empty() ? m_p.name : m_p.family; }

  // Every method outcome of an iteration, as experience for later runs.
  void record_experience(const VersionRecord& rec) {
    if (!m_o.experience) return;
    record_predictions(rec);
    if (rec.method_outcomes.empty()) return;
    std::vector<ExperienceRecord> out;
    for (const auto& [method, cls] : rec.method_outcomes) {
      ExperienceRecord e;
      e.family = family();
      e.chip = chip();
      e.bottleneck = rec.bottleneck;
      e.method = method;
      e.params = rec.point;
      e.time_after_s = rec.median_s;
      auto a = rec.attribution_ms.find(method);
      e.time_before_s = a != rec.attribution_ms.end() ? rec.median_s + a->second * 1e-3 : rec.median_s;
      e.speedup = e.time_after_s > 0 ? e.time_before_s / e.time_after_s : 1.0;
      if (cls == "implementation_failed") e.verdict = "failure";
      if (auto s = m_last_sass.find(method); s != m_last_sass.end()) e.sass_verdict = s->second;
      e.attribution_ms = a != rec.attribution_ms.end() ? a->second : 0;
      e.run_id = m_state.problem + "@" + m_state.created_at;
      e.date = utc_timestamp();
      e.note = fmt::format("v{} {}: {}", rec.index, rec.outcome, cls);
      out.push_back(e);
    }
    if (auto r = m_o.experience->add(out); !r) m_o.log("experience DB: " + r.error().message);
  }

  // The branches' predictions, judged, as experience: which beliefs about a method held.
  void record_predictions(const VersionRecord& rec) {
    std::vector<PredictionRecord> out;
    for (const auto& p : rec.predictions) {
      PredictionRecord r;
      r.family = family();
      r.chip = chip();
      r.bottleneck = rec.bottleneck;
      r.prediction = p;
      r.accepted = rec.outcome == "accepted" && m_candidate_branch == p.branch;
      for (const auto& b : m_closing_branches)
        if (b.id == p.branch) {
          r.methods = b.ablates.empty() ? b.methods : std::vector<std::string>{"-" + b.ablates};
          r.hypothesis = b.hypothesis;
        }
      r.run_id = m_state.problem + "@" + m_state.created_at;
      r.date = utc_timestamp();
      out.push_back(std::move(r));
    }
    if (!out.empty())
      if (auto r = m_o.experience->add_predictions(out); !r) m_o.log("experience DB: " + r.error().message);
  }

  Expected<void> close_iteration(int i, VersionRecord rec, bool accepted) {
    record_experience(rec);
    (void)write_text_atomic(version_dir(i) / "attribution.json",
                            json{{"methods", rec.methods}, {"method_outcomes", rec.method_outcomes},
                                 {"attribution_ms", rec.attribution_ms}, {"attribution_pct", rec.attribution_pct},
                                 {"outcome", rec.outcome}, {"note", rec.note}}
                                .dump(2));
    m_state.versions.push_back(rec);
    m_state.iteration = i;
    m_state.no_improvement = accepted ? 0 : m_state.no_improvement + 1;
    if (auto s = save(); !s) return s;
    commit(fmt::format("v{}: {} {}{}", i, rec.outcome, Variant{rec.kernel, rec.point}.label(),
                       rec.median_s > 0 ? ", " + human_time(rec.median_s) : ""),
           &m_state.versions.back());
    if (auto s = save(); !s) return s;
    m_o.log(fmt::format("iteration {}: {}{}", i, rec.outcome, rec.note.empty() ? "" : " — " + rec.note));
    if (m_state.no_improvement >= m_o.patience)
      finish(fmt::format("no improvement for {} iterations", m_state.no_improvement));
    return {};
  }

  SelectionContext selection(const Explanation& e, const Variant& champ) {
    SelectionContext ctx;
    ctx.catalog = &m_catalog;
    ctx.budget = allocate_budget(e.gaps);
    ctx.metrics = trigger_metrics(e.metrics);
    ctx.sm = m_lab.sm();
    for (const auto& [m, o] : m_state.method_history())
      if (auto parsed = parse_method_outcome(o)) ctx.history[m] = *parsed;
    ctx.available.emplace();  // what the problem can still switch on; an agent can write any method
    if (m_agent)
      for (const auto& m : m_catalog.methods) ctx.available->insert(m.id);
    else if (m_mk)
      for (const auto& t : m_mk->methods)
        if (!(champ.kernel == m_mk->name && applies(champ.point, t.on))) ctx.available->insert(t.method);
    return ctx;
  }

  // The ranked answer: methods already in the champion's machine code are not suggested.
  Advice advice_for(const Explanation& e, const Variant& champ, double champ_time) {
    AdviceInputs in;
    in.ctx = m_ctx;
    in.explanation = &e;
    in.time_s = champ_time;
    in.formula = m_o.budget_formula;
    if (m_ctx.available && !m_ctx.available->empty()) {
      std::vector<std::string> ids(m_ctx.available->begin(), m_ctx.available->end());
      for (const auto& [m, verdict] : m_lab.verify(champ, ids))
        if (verdict == SassVerdictKind::verified) {
          in.in_sass.insert(m);
          m_ctx.available->erase(m);  // the validator must not ask why it was skipped
        }
      in.ctx.available = m_ctx.available;
    }
    return advise(in);
  }

  // The chosen methods on, over the champion (or the method kernel's default with every
  // method off); the other branches vary the params no method switches. A problem without
  // method toggles has its methods in separate kernels: branches then spread over every
  // kernel with params (the champion's point for its own kernel, defaults for the others).
  std::vector<Variant> make_branches(const Variant& champ, const std::vector<std::string>& methods, int i, int attempt) {
    if (m_mk) return kernel_branches(*m_mk, champ, methods, i, attempt, m_o.branches);
    std::vector<const KernelSpec*> tunable;
    for (const auto& k : m_p.kernels)
      if (!k.params.empty()) tunable.push_back(&k);
    std::vector<Variant> out;
    int n_kernels = static_cast<int>(tunable.size());
    bool champ_tunable = std::any_of(tunable.begin(), tunable.end(), [&](auto* k) { return k->name == champ.kernel; });
    for (int n = 0; n < n_kernels && static_cast<int>(out.size()) < m_o.branches; ++n) {
      // The champion's kernel gets most of the branches; otherwise they are shared out.
      int share = champ_tunable ? (tunable[n]->name == champ.kernel ? m_o.branches - n_kernels + 1 : 1)
                                : m_o.branches / n_kernels + (n < m_o.branches % n_kernels ? 1 : 0);
      for (auto& v : kernel_branches(*tunable[n], champ, {}, i, attempt, std::max(1, share)))
        if (static_cast<int>(out.size()) < m_o.branches) out.push_back(std::move(v));
    }
    return out;
  }

  std::vector<Variant> kernel_branches(const KernelSpec& kernel, const Variant& champ, const std::vector<std::string>& methods,
                                       int i, int attempt, int count) {
    const KernelSpec* k = &kernel;
    if (k->params.empty()) return {};
    ParamPoint base;
    if (champ.kernel == k->name) {
      base = champ.point;
    } else {
      auto d = default_point(m_p, *k);
      if (!d) return {};
      base = *d;
      for (const auto& t : k->methods) base = with(base, t.off);
    }
    for (const auto& m : methods)
      if (const MethodToggle* t = k->find_method(m)) base = with(base, t->on);
    // The search module's space: params a method switches are held at the base's values.
    std::set<std::string> switched;
    for (const auto& t : k->methods)
      for (const auto& [p, v] : t.on) switched.insert(p);
    SearchSpace space = SearchSpace::from_kernel(*k, m_p.dim_scope());
    for (auto& [name, values] : space.params)
      if (switched.contains(name)) values = {base.at(name)};
    std::vector<Variant> out;
    if (attempt == 0 && space.feasible(base)) out.push_back(Variant{k->name, base, {}});
    std::mt19937_64 rng(m_o.seed * 1000003u + static_cast<std::uint64_t>(i) * 101u + static_cast<std::uint64_t>(attempt) +
                        std::hash<std::string>{}(k->name));
    for (auto& p : space.sample(static_cast<std::size_t>(count) - out.size(), rng, {base}))
      out.push_back(Variant{k->name, std::move(p), {}});
    return out;
  }

  // SASS check and leave-one-out ablation of each method the winner applies.
  void attribute(VersionRecord& rec, const Variant& wv, const Measured& wm, const std::vector<std::string>& methods,
                 const fs::path& dir) {
    const KernelSpec* k = m_p.find_kernel(wv.kernel);
    std::vector<std::string> applied;
    for (const auto& m : methods)
      if (const MethodToggle* t = k ? k->find_method(m) : nullptr; t && applies(wv.point, t->on)) applied.push_back(m);
    auto sass = verify_in_sass(wv, applied, dir);
    for (const auto& m : applied) {
      Variant ablated{wv.kernel, with(wv.point, k->find_method(m)->off)};
      auto [key, am] = measure(ablated);
      write_variant_files(dir / "ablations" / m, ablated, am);
      auto verdict = sass.find(m);
      if (verdict != sass.end() && verdict->second == SassVerdictKind::missing) {
        rec.method_outcomes[m] = "implementation_failed";
        continue;
      }
      if (!am.ok()) {  // without the method the kernel fails: it is needed
        rec.method_outcomes[m] = "effective";
        continue;
      }
      attribute_one(rec, m, wm, am);
    }
  }

  // Each method's SASS verdict on the winner, written to sass.json and kept for the experience DB.
  std::map<std::string, SassVerdictKind> verify_in_sass(const Variant& wv, const std::vector<std::string>& methods,
                                                        const fs::path& dir) {
    auto sass = m_lab.verify(wv, methods);
    json sass_json = json::object();
    m_last_sass.clear();
    for (const auto& [m, v] : sass) sass_json[m] = m_last_sass[m] = std::string(sass_verdict_name(v));
    (void)write_text_atomic(dir / "sass.json", sass_json.dump(2));
    return sass;
  }

  // Leave-one-out: the time the winner saves over its variant without method m, and whether
  // that is more than the noise (at least 1 %).
  static void attribute_one(VersionRecord& rec, const std::string& m, const Measured& winner, const Measured& without) {
    double saved = without.median_s - winner.median_s;
    rec.attribution_ms[m] = saved * 1e3;
    double noise = std::max({winner.noise, without.noise, 0.01});
    rec.method_outcomes[m] = saved > noise * winner.median_s ? "effective" : "ineffective";
  }

  std::string hypothesis(int i, const Explanation& e, const SelectionContext& ctx, const std::vector<MethodCandidate>& chosen,
                         const Variant& champ, double champ_time) {
    std::string out = fmt::format("# Iteration {}: hypothesis\n\n## Hypothesis\n\n", i);
    if (chosen.empty()) {
      std::vector<std::string> tunable;
      for (const auto& k : m_p.kernels)
        if (!k.params.empty() && (!m_mk || &k == m_mk)) tunable.push_back(k.name);
      out += fmt::format("No method to suggest within the budget; varying the params of {} finds a point faster than "
                         "{}.\n",
                         tunable.empty() ? champ.kernel : fmt::format("{}", fmt::join(tunable, ", ")), human_time(champ_time));
    } else {
      std::vector<std::string> ids;
      for (const auto& c : chosen) ids.push_back(c.method);
      out += fmt::format("Turning on {} in {} closes the gaps it targets and brings the time below {}.\n",
                         fmt::join(ids, ", "), m_mk ? m_mk->name : champ.kernel, human_time(champ_time));
    }
    out += fmt::format("\n## Rationale\n\nThe champion {} is {}{}: {}\n\n", champ.label(), bottleneck_name(e.bottleneck.cls),
                       e.bottleneck.limiter.empty() ? "" : " (" + e.bottleneck.limiter + ")", e.bottleneck.rule);
    if (m_advice.headroom.bounding) {
      out += "Headroom: " + m_advice.headroom.summary + ".\n";
      for (Axis a : {Axis::compute, Axis::memory, Axis::latency})
        if (const auto& x = m_advice.headroom.of(a); !x.text.empty()) out += fmt::format("- {}: {}\n", axis_name(a), x.text);
      out += "\n";
    }
    out += fmt::format("Budget ({}): {} (Δc {:.2f}, Δm {:.2f}, Δl {:.2f}){}.\n\n", budget_formula_name(m_o.budget_formula),
                       ctx.budget.to_string(), ctx.budget.gaps[0], ctx.budget.gaps[1], ctx.budget.gaps[2],
                       m_advice.headroom.bounding ? "; KernelFlow's gaps would give " + m_advice.kernelflow.to_string() : "");
    if (m_advice.stop) out += "Stop recommended: " + m_advice.stop_reason + ".\n\n";
    for (const auto& c : chosen) {
      const Method* m = m_catalog.find(c.method);
      out += fmt::format("- {} ({}, priority {}): triggered by {}, strength {:.2f}. {}\n", c.method, axis_name(c.axis),
                         c.priority, c.why, c.strength, m ? m->playbook : "");
    }
    for (const auto& n : m_experience_notes) out += "- experience: " + n + "\n";
    out += "\n## Expected\n\n";
    for (const auto& c : chosen) {
      const Method* m = m_catalog.find(c.method);
      if (m && m->trigger)
        out += fmt::format("- `{}` moves toward {:g} (now {:.4g})\n", m->trigger->metric, m->trigger->good,
                           metric(ctx.metrics, m->trigger->metric).value_or(0));
    }
    out += fmt::format("- time: below {} (interleaved comparison, outside the noise)\n", human_time(champ_time));
    return out;
  }

 private:
  const Problem& m_p;
  const MethodCatalog& m_catalog;
  OptimizeOptions m_o;
  Lab& m_lab;
  GitRepo* m_git;
  const KernelSpec* m_mk;
  RunState m_state;
  SelectionContext m_ctx;
  std::vector<MethodCandidate> m_chosen;
  Advice m_advice;
  MetricValues m_open_metrics;  // the champion's profile at the open: the "before" of predictions
  bool m_agent = false;         // an agent writes the branches: any catalog method is open to it
  std::vector<BranchRecord> m_closing_branches;  // the branches of the iteration being closed
  std::string m_candidate_branch;
  std::vector<std::string> m_experience_notes;
  std::map<std::string, std::string> m_last_sass;
};

}  // namespace

#define KOPT_OPTIMIZER_CALL(expr)                                   \
  try {                                                             \
    Optimizer o(problem, catalog, options, lab, git);               \
    return expr;                                                    \
  } catch (const std::exception& e) {                               \
    return Unexpected(internal_error(std::string("optimize: ") + e.what())); \
  }

Expected<RunState> iter_open(const Problem& problem, const MethodCatalog& catalog, const OptimizeOptions& options, Lab& lab,
                             GitRepo* git) {
  KOPT_OPTIMIZER_CALL(o.agent_open())
}

Expected<RunState> iter_branch(const Problem& problem, const MethodCatalog& catalog, const OptimizeOptions& options,
                               Lab& lab, const BranchRecord& branch, const std::filesystem::path& file) {
  GitRepo* git = nullptr;
  KOPT_OPTIMIZER_CALL(o.agent_branch(branch, file))
}

Expected<RunState> iter_close(const Problem& problem, const MethodCatalog& catalog, const OptimizeOptions& options, Lab& lab,
                              GitRepo* git) {
  KOPT_OPTIMIZER_CALL(o.agent_close())
}

Expected<RunState> iter_finalize(const Problem& problem, const MethodCatalog& catalog, const OptimizeOptions& options,
                                 Lab& lab, GitRepo* git) {
  KOPT_OPTIMIZER_CALL(o.agent_finalize())
}

Expected<RunState> run_optimize(const Problem& problem, const MethodCatalog& catalog, const OptimizeOptions& options,
                                Lab& lab, GitRepo* git) {
  KOPT_OPTIMIZER_CALL(o.run())
}

}  // namespace kopt
