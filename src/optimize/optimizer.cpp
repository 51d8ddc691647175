#include "kopt/optimize/optimizer.hpp"

#include "optimizer_impl.hpp"

namespace kopt::optimize {

std::string Variant::label() const {
  return kernel + (point.empty() ? "" : " " + point_to_string(point)) +
         (source.empty() ? "" : " [" + source + "]");
}

const KernelSpec* method_kernel(const Problem& problem) {
  for (const auto& k : problem.kernels)
    if (!k.methods.empty()) return &k;
  return nullptr;
}

namespace optimizer_detail {
namespace {

std::map<std::string, std::int64_t> run_dims(const Problem& p) {
  std::map<std::string, std::int64_t> out;
  for (const auto& d : p.dims) out[d.name] = d.value;
  return out;
}

}  // namespace

Expected<RunState> Optimizer::run() {
  if (auto r = open(); !r) return Unexpected(r.error());
  if (m_state.versions.empty())
    if (auto r = baseline(); !r) return Unexpected(r.error());
  while (m_state.status == RunPhase::running) {
    if (m_state.iteration >= m_o.iterations) {
      finish("iteration limit (" + std::to_string(m_o.iterations) + ")");
      break;
    }
    if (auto r = iterate(m_state.iteration + 1); !r) return Unexpected(r.error());
  }
  return m_state;
}

Expected<void> Optimizer::open() {
  std::error_code ec;
  bool exists = fs::exists(run_state_path(m_o.run_dir), ec);
  const bool restarting = m_o.from_version || m_o.restart != OptimizeOptions::Restart::none;
  if (exists && !m_o.resume && !restarting)
    return Unexpected(bad_input("a run already exists in " + m_o.run_dir.string() +
                                ": continue it with --resume, or choose another --run directory"));
  if (exists) {
    auto s = load_run_state(m_o.run_dir);
    if (!s) return Unexpected(s.error());
    if (s->problem != m_p.name)
      return Unexpected(bad_input("the run in " + m_o.run_dir.string() + " is of problem '" +
                                  s->problem + "', not '" + m_p.name + "'"));
    if (std::map<std::string, std::int64_t> now = run_dims(m_p); !s->dims.empty() && s->dims != now)
      for (const auto& [name, value] : now)
        if (auto it = s->dims.find(name); it == s->dims.end() || it->second != value)
          return Unexpected(bad_input(fmt::format(
              "the run in {} measures {}={}, not {}={}: every time it recorded is of that shape; "
              "resume it without --dim {}, or start another --run",
              m_o.run_dir.string(), name,
              it == s->dims.end() ? std::string("(unset)") : std::to_string(it->second), name,
              value, name)));
    m_state = *s;
    if (auto r = restart(); !r) return r;
    if (m_state.status == RunPhase::finished && m_state.iteration < m_o.iterations) {
      m_state.status = RunPhase::running;  // asked for more iterations than the run had
      m_state.stop_reason.clear();
    }
    if (m_state.status == RunPhase::finished || m_state.iteration >= m_o.iterations)
      m_o.log(fmt::format(
          "the run in {} has done {} iteration(s){}; --iterations {} asks for no more: raise it "
          "to go on",
          m_o.run_dir.string(), m_state.iteration,
          m_state.stop_reason.empty() ? "" : " and stopped (" + m_state.stop_reason + ")",
          m_o.iterations));
    else
      m_o.log(fmt::format("resuming {} at iteration {} ({} measurements recorded)",
                          m_o.run_dir.string(), m_state.iteration + 1, m_state.evaluations.size()));
  } else if (restarting) {
    return Unexpected(bad_input("no run in " + m_o.run_dir.string() +
                                " to restart: --from and --restart continue a recorded run"));
  } else {
    fs::create_directories(m_o.run_dir, ec);
    if (ec)
      return Unexpected(bad_input("cannot create " + m_o.run_dir.string() + ": " + ec.message()));
    m_state.problem = m_p.name;
    m_state.problem_dir = fs::absolute(m_p.dir).string();
    m_state.dims = run_dims(m_p);
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

Expected<void> Optimizer::restart() {
  std::vector<int> mask;
  std::string why;
  if (m_o.from_version) {
    const int k = *m_o.from_version;
    if (k < 0 || k >= static_cast<int>(m_state.versions.size()))
      return Unexpected(bad_input(fmt::format("--from v{}: the run in {} has v0..v{}", k,
                                              m_o.run_dir.string(), m_state.versions.size() - 1)));
    const VersionRecord& v = m_state.versions[static_cast<std::size_t>(k)];
    if (v.outcome != VersionOutcome::baseline && v.outcome != VersionOutcome::accepted)
      return Unexpected(bad_input(fmt::format(
          "--from v{}: v{} was {}, never a champion; a restart starts from the baseline or an "
          "accepted version",
          k, k, v.outcome)));
    if (v.masked) return Unexpected(bad_input(fmt::format("--from v{}: v{} is masked", k, k)));
    for (const auto& r : m_state.versions)
      if (r.index > k && r.outcome == VersionOutcome::accepted && !r.masked)
        mask.push_back(r.index);
    why = fmt::format("restarted from v{} (--from)", k);
  } else if (m_o.restart == OptimizeOptions::Restart::mask_half) {
    std::vector<int> accepted;
    for (const auto& r : m_state.versions)
      if (r.outcome == VersionOutcome::accepted && !r.masked) accepted.push_back(r.index);
    if (accepted.empty())
      return Unexpected(bad_input("--restart mask-half: the run in " + m_o.run_dir.string() +
                                  " has no accepted version to mask: it is at its baseline"));
    mask.assign(accepted.end() - static_cast<long>((accepted.size() + 1) / 2), accepted.end());
    why = fmt::format(
        "restarted with the newer half of the accepted versions masked "
        "(--restart mask-half)");
  } else {
    return {};
  }
  if (auto r = set_masked(m_state, mask, true, why); !r) return r;
  m_state.status = RunPhase::running;
  m_state.stop_reason.clear();
  m_state.no_improvement = 0;
  m_o.iterations += m_state.iteration;  // that many more from here
  m_o.log(fmt::format(
      "{}: {} masked, the champion is v{} at {}; {} more iteration(s)", why,
      mask.empty() ? std::string("no version") : fmt::format("v{}", fmt::join(mask, ", v")),
      m_state.champion()->index, human_time(m_state.champion()->median_s),
      m_o.iterations - m_state.iteration));
  return {};
}

Expected<void> Optimizer::save() {
  return save_run_state(m_o.run_dir, m_state);
}

void Optimizer::commit(const std::string& message, VersionRecord* record) {
  if (!m_git) return;
  auto c = m_git->commit_all(message);
  if (c && record) record->git_commit = *c;
  if (c) return;
  // The run goes on without its history, and says why: in the log, run.json and report.md.
  if (m_state.git_error.empty()) m_o.log("git: " + c.error().message);
  m_state.git_error = c.error().message;
  (void)save();
}

void Optimizer::finish(const std::string& reason) {
  m_state.status = RunPhase::finished;
  m_state.stop_reason = reason;
  (void)save();
  commit("finished: " + reason, nullptr);
  m_o.log("stop: " + reason);
}

fs::path Optimizer::version_dir(int i) const {
  return m_o.run_dir / ("v" + std::to_string(i));
}

EvaluationRecord Optimizer::record(const std::string& key, const std::string& kernel,
                                   const ParamPoint& point, const Measured& m) {
  return EvaluationRecord{key,       kernel,  point,           m.status, m.median_s, m.noise,
                          m.samples, m.error, utc_timestamp(), m.clocks, m.flags,    m.device};
}

std::pair<std::string, Measured> Optimizer::measure(const Variant& v) {
  return measure_all({v}).at(0);
}

// Recorded evaluations are reused; the rest are measured together (one per worker where the
// lab has several), each recorded and saved as it is done.
std::vector<std::pair<std::string, Measured>> Optimizer::measure_all(
    const std::vector<Variant>& vs) {
  std::vector<std::pair<std::string, Measured>> out(vs.size());
  std::vector<Variant> todo;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    auto key = m_lab.evaluation_key(vs[i]);
    if (!key) {
      out[i] = {"", Measured{VariantStatus::compile_failed, 0, 0, 0, key.error().message}};
      continue;
    }
    out[i].first = *key;
    if (const EvaluationRecord* e = m_state.find_evaluation(*key)) {
      out[i].second = Measured{e->status, e->median_s, e->noise, e->samples,
                               e->error,  e->clocks,   e->flags, e->device};
      continue;
    }
    todo.push_back(vs[i]);
    where.push_back(i);
  }
  if (todo.empty()) return out;
  m_lab.measure_all(todo, [&](std::size_t j, const Measured& m) {
    const Variant& v = todo[j];
    const std::string& key = out[where[j]].first;
    // Each as it is done, so that a run killed in the middle keeps what was measured; a failure
    // of kopt's environment is no verdict on the kernel: not recorded, measured again on resume.
    if (!m.environment) {
      m_state.evaluations[key] = record(key, v.kernel, v.point, m);
      (void)save();
    }
    m_o.log(fmt::format(
        "  {:<40} {}{}{}", v.label(),
        m.ok() ? human_time(m.median_s) : std::string(name_of(m.status)) + ": " + m.error,
        m.device.empty() ? "" : "  (" + m.device + ")",
        m.environment ? " (kopt's environment failed, not the kernel: not recorded; a resume "
                        "measures it again)"
                      : ""));
    for (const auto& f : m.flags) m_o.log("    flagged: " + f);
    out[where[j]].second = m;
  });
  return out;
}

void Optimizer::write_variant_files(const fs::path& dir, const Variant& v, const Measured& m) {
  fs::create_directories(dir);
  const KernelSpec* k = m_p.find_kernel(v.kernel);
  std::string name = k ? k->source.filename().string() : "kernel.cu";
  (void)write_text_atomic(dir / name, m_lab.source_text(v));
  (void)write_text_atomic(dir / "params.json",
                          json{{"kernel", v.kernel}, {"params", v.point}}.dump(2));
  (void)write_text_atomic(dir / "bench.json", json{{"status", m.status},
                                                   {"median_s", m.median_s},
                                                   {"noise", m.noise},
                                                   {"samples", m.samples},
                                                   {"error", m.error},
                                                   {"flags", m.flags}}
                                                  .dump(2));
}

Expected<void> Optimizer::baseline() {
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
  if (m.environment)
    return Unexpected(
        environment_error("measuring the starting kernel " + v.label() +
                          " failed in kopt's environment, not in the "
                          "kernel (" +
                          m.error +
                          "); nothing was recorded: fix the environment and run again with "
                          "--resume"));
  if (!m.ok())
    return Unexpected(bad_input("the starting kernel " + v.label() + " fails (" +
                                std::string(name_of(m.status)) + ": " + m.error +
                                "): nothing to optimize from"));
  VersionRecord r;
  r.index = 0;
  r.kernel = v.kernel;
  r.point = v.point;
  r.evaluation = key;
  r.median_s = m.median_s;
  r.noise = m.noise;
  r.flags =
      m.flags;  // the baseline is where the run starts, flagged or not: the flags stay on record
  r.outcome = VersionOutcome::baseline;
  write_variant_files(version_dir(0), v, m);
  if (auto ref = m_lab.measure_reference())
    m_state.reference = record("reference", "reference", {}, *ref);
  for (const auto& [name, b] : m_lab.measure_baselines())
    m_state.baselines.push_back(record(name, name, {}, b));
  m_state.versions.push_back(r);
  commit("v0: baseline " + v.label() + ", " + human_time(m.median_s), &m_state.versions.back());
  return save();
}

Expected<Optimizer::Opened> Optimizer::from_champion() const {
  const VersionRecord* champ_rec = m_state.champion();
  if (!champ_rec)
    return Unexpected(bad_input("every version of this run is masked: unmask one to continue"));
  Opened o;
  o.champ = Variant{champ_rec->kernel, champ_rec->point, champ_rec->source};
  o.champ_time = champ_rec->median_s;
  return o;
}

Expected<std::optional<Optimizer::Opened>> Optimizer::begin_iteration(int i) {
  auto opened = from_champion();
  if (!opened) return Unexpected(opened.error());
  Opened& o = *opened;
  const VersionRecord* champ_rec = m_state.champion();
  fs::path dir = version_dir(i);
  m_o.log(fmt::format("iteration {}: champion v{} {} at {}", i, champ_rec->index, o.champ.label(),
                      human_time(o.champ_time)));
  if (auto t = m_lab.target_time(); t && o.champ_time <= *t) {
    finish(fmt::format("target met ({} <= {}, 90 % of the roof)", human_time(o.champ_time),
                       human_time(*t)));
    return std::optional<Opened>{};
  }
  fs::create_directories(dir);
  auto expl = champion_profile(champ_rec->evaluation, o.champ, dir / "profile");
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
  // Near the peak or at the roof, but the whole space of the kernel a round tunes is not
  // screened yet: the stop waits for one round of tuning only, so that the loop never stops
  // above what `kopt tune` finds on the same kernel.
  const bool unscreened = !m_agent && space_unscreened(tuned_kernel(o.champ));
  bool screen_first = false;
  auto stop_or_screen = [&](const std::string& why) {
    if (!unscreened) {
      finish(why);
      return true;
    }
    if (!screen_first)
      m_o.log("    " + why.substr(0, why.find(':')) + ", but the space of " +
              tuned_kernel(o.champ) + " is not screened yet: one round of tuning first");
    screen_first = true;
    return false;
  };
  if (expl->gaps.near_peak && stop_or_screen("near_peak: Δc, Δm and Δl all below 0.15"))
    return std::optional<Opened>{};
  m_ctx = selection(*expl, o.champ);
  m_experience_notes = consult_experience(std::string(bottleneck_name(expl->bottleneck.cls)));
  m_pitfalls = pitfalls_here(std::string(bottleneck_name(expl->bottleneck.cls)));
  for (const auto& p : m_pitfalls) m_o.log("    pitfall seen here before: " + p);
  // No gap at all means no counters (OpenCL): no trigger can fire, so untried methods go blind.
  bool counters = expl->gaps.compute || expl->gaps.memory || expl->gaps.latency;
  m_advice = advice_for(*expl, o.champ, o.champ_time);
  if (m_advice.headroom.bounding) {  // on the roofline: by counters, or by the cost formulas alone
    m_ctx.budget = m_advice.budget;
    m_ctx.metrics = m_advice.metrics;
    if (m_advice.headroom.at_roof && !m_agent &&
        stop_or_screen("at_roof: " + m_advice.headroom.summary))
      return std::optional<Opened>{};
    m_chosen.clear();
    for (const auto& sg : m_advice.suggestions)
      if (sg.within_budget)
        m_chosen.push_back({sg.method, sg.axis, m_catalog.find(sg.method)->priority,
                            sg.strength.value_or(0), sg.why});
  } else {
    m_chosen = counters ? suggest_methods(m_ctx) : untriggered_candidates(m_ctx, 1);
  }
  if (screen_first) m_chosen.clear();  // tuning only: the space before any method
  m_open_metrics = m_ctx.metrics;
  m_open_metrics[k_time_metric] = o.champ_time;
  MethodSet set;
  for (const auto& c : m_chosen) set.methods.push_back(c.method);
  // The advice may rank a triggered method below another of its axis (the bottleneck rule
  // cites the other's trigger, or the list ran out): the validator hears why.
  if (screen_first) {
    const std::string why = "at the roof: this round screens the kernel's whole space first";
    for (const auto& c : suggest_methods(m_ctx)) set.skip_reasons[c.method] = why;
    for (const auto& sg : m_advice.suggestions) set.skip_reasons[sg.method] = why;
  }
  for (const auto& sg : m_advice.suggestions)
    if (sg.triggered && !sg.within_budget)
      set.skip_reasons[sg.method] =
          fmt::format("ranked #{} in the open's answer, below the budget's cut", sg.rank);
  for (const auto& m : m_catalog.methods)
    if (auto st = method_strength(m, m_ctx.metrics);
        m_advice.headroom.bounding && st && *st >= k_triggered && !set.skip_reasons.contains(m.id))
      set.skip_reasons[m.id] = "not in the first " + std::to_string(m_advice.suggestions.size()) +
                               " of the open's answer";
  if (auto issues = validate_methods(m_ctx, set); !issues.empty())
    return Unexpected(
        internal_error("the loop chose a method set its validator rejects: " + issues[0].message));
  (void)write_text_atomic(dir / "hypothesis.md",
                          hypothesis(i, *expl, m_ctx, m_chosen, o.champ, o.champ_time));
  o.rec.index = i;
  o.rec.iteration = i;
  o.rec.bottleneck = std::string(bottleneck_name(expl->bottleneck.cls));
  o.rec.evidence.push_back(expl->bottleneck.rule);
  for (const auto& e : expl->bottleneck.evidence)
    o.rec.evidence.push_back(fmt::format("{} = {:.4g}", e.metric, e.value));
  if (m_advice.headroom.bounding)
    o.rec.evidence.push_back("headroom: " + m_advice.headroom.summary);
  o.rec.hypothesis =
      !set.methods.empty() ? "turn on " + fmt::format("{}", fmt::join(set.methods, ", "))
      : screen_first       ? "at the roof; screening the whole space of " + tuned_kernel(o.champ) +
                           " before the stop"
      : m_advice.headroom.at_roof ? "stop recommended: " + m_advice.stop_reason
                                  : "tuning only: no method to suggest within the budget";
  o.rec.methods = set.methods;
  return std::optional<Opened>{o};
}

Expected<void> Optimizer::iterate(int i) {
  auto opened = begin_iteration(i);
  if (!opened) return Unexpected(opened.error());
  if (!*opened) return {};
  Opened& o = **opened;
  if (!m_o.proposer.empty()) return iterate_with_proposer(i, o);
  fs::path dir = version_dir(i);
  // Branches, retried with other tunings when all of them fail.
  std::optional<std::pair<Variant, Measured>> winner;
  std::string winner_key;
  std::vector<RoundBranch> ran;  // the branches that measured, for the round's profile session
  std::vector<Measured> failed;  // the branches that did not, for the pitfall's cause
  for (int attempt = 0; attempt <= m_o.max_retries && !winner; ++attempt) {
    auto branches = make_branches(o.champ, o.rec.methods, i, attempt);
    if (branches.empty() && attempt == 0) {
      // Nothing new to try is a reason to stop, not a failed round (patience counts rounds
      // that tried something).
      finish(
          "nothing new to try: every point of the tunable kernels' spaces is measured or screened");
      return {};
    }
    if (branches.empty()) break;
    // Measured at once where the lab has several workers; the winner is then compared with
    // the champion on one device (decide).
    auto measured = measure_all(branches);
    for (std::size_t b = 0; b < branches.size(); ++b) {
      auto& [key, m] = measured[b];
      fs::path bdir = dir / "branches" / ("b" + std::to_string(attempt) + "_" + std::to_string(b));
      write_variant_files(bdir, branches[b], m);
      if (m.ok()) ran.push_back({branches[b], bdir / "profile", key});
      if (!m.ok()) failed.push_back(m);
      if (m.ok() && (!winner || m.median_s < winner->second.median_s)) {
        winner = {branches[b], m};
        winner_key = key;
      }
    }
  }
  if (!winner) {
    PitfallCause cause = failure_cause(failed);
    return record_failure(i, o, fmt::format("every branch failed (after retries): {}", cause),
                          cause);
  }
  if (m_o.profile_branches) profile_round(dir / "branches", ran);
  judge_loop_predictions(i, o.rec, winner->first, winner_key, winner->second);
  return decide(i, o, winner->first, winner->second, winner_key, nullptr);
}

void Optimizer::profile_round(const fs::path& session_dir,
                              const std::vector<RoundBranch>& measured) {
  std::vector<const RoundBranch*>
      todo;  // those not profiled before (a branch may be the champion's point)
  std::vector<Variant> vs;
  std::vector<fs::path> dirs;
  for (const RoundBranch& b : measured)
    if (!m_round_profiles.contains(b.key) &&
        std::none_of(todo.begin(), todo.end(),
                     [&](const RoundBranch* t) { return t->key == b.key; })) {
      todo.push_back(&b);
      vs.push_back(b.variant);
      dirs.push_back(b.dir);
    }
  if (todo.empty()) return;
  auto profiles = m_lab.profile_all(vs, dirs, session_dir);
  for (std::size_t t = 0; t < todo.size(); ++t) {
    const auto& e = profiles.at(t);
    m_o.log(fmt::format("    profiled {:<31} {}", vs[t].label(),
                        e ? std::string(bottleneck_name(e->bottleneck.cls))
                          : "not profiled: " + e.error().message));
    if (e) m_round_profiles[todo[t]->key] = {*e, todo[t]->dir};
  }
}

Expected<Explanation> Optimizer::champion_profile(const std::string& key, const Variant& champ,
                                                  const fs::path& dir) {
  if (auto it = m_round_profiles.find(key); it != m_round_profiles.end() && !key.empty()) {
    // The same build at the same point, profiled in the last round's session: its files here too.
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::copy(it->second.second, dir,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    m_o.log("    profile: " + champ.label() + "'s from the last round's ncu session");
    return it->second.first;
  }
  auto e = m_lab.profile(champ, dir);
  if (e && !key.empty()) m_round_profiles[key] = {*e, dir};
  return e;
}

}  // namespace optimizer_detail

#define KOPT_OPTIMIZER_CALL(expr)                                            \
  try {                                                                      \
    optimizer_detail::Optimizer o(problem, catalog, options, lab, git);      \
    return expr;                                                             \
  } catch (const std::exception& e) {                                        \
    return Unexpected(internal_error(std::string("optimize: ") + e.what())); \
  }

Expected<RunState> iter_open(const Problem& problem, const MethodCatalog& catalog,
                             const OptimizeOptions& options, Lab& lab,
                             GitRepo* git){KOPT_OPTIMIZER_CALL(o.agent_open())}

Expected<RunState> iter_branch(const Problem& problem, const MethodCatalog& catalog,
                               const OptimizeOptions& options, Lab& lab, const BranchRecord& branch,
                               const std::filesystem::path& file) {
  GitRepo* git = nullptr;
  KOPT_OPTIMIZER_CALL(o.agent_branch(branch, file))
}

Expected<RunState> iter_close(const Problem& problem, const MethodCatalog& catalog,
                              const OptimizeOptions& options, Lab& lab,
                              GitRepo* git){KOPT_OPTIMIZER_CALL(o.agent_close())}

Expected<RunState> iter_finalize(const Problem& problem, const MethodCatalog& catalog,
                                 const OptimizeOptions& options, Lab& lab,
                                 GitRepo* git){KOPT_OPTIMIZER_CALL(o.agent_finalize())}

Expected<RunState> run_optimize(const Problem& problem, const MethodCatalog& catalog,
                                const OptimizeOptions& options, Lab& lab, GitRepo* git) {
  KOPT_OPTIMIZER_CALL(o.run())
}

}  // namespace kopt::optimize
