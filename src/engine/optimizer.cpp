#include "kopt/engine/optimizer.hpp"

#include "optimizer_impl.hpp"

namespace kopt {

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

Expected<RunState> Optimizer::run() {
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

Expected<void> Optimizer::open() {
  std::error_code ec;
  bool exists = fs::exists(run_state_path(m_o.run_dir), ec);
  if (exists && !m_o.resume)
    return Unexpected(bad_input("a run already exists in " + m_o.run_dir.string() +
                                ": continue it with --resume, or choose another --run directory"));
  if (exists) {
    auto s = load_run_state(m_o.run_dir);
    if (!s) return Unexpected(s.error());
    if (s->problem != m_p.name)
      return Unexpected(bad_input("the run in " + m_o.run_dir.string() + " is of problem '" +
                                  s->problem + "', not '" + m_p.name + "'"));
    m_state = *s;
    if (m_state.status == "finished" && m_state.iteration < m_o.iterations) {
      m_state.status = "running";  // asked for more iterations than the run had
      m_state.stop_reason.clear();
    }
    m_o.log(fmt::format("resuming {} at iteration {} ({} measurements recorded)",
                        m_o.run_dir.string(), m_state.iteration + 1, m_state.evaluations.size()));
  } else {
    fs::create_directories(m_o.run_dir, ec);
    if (ec)
      return Unexpected(bad_input("cannot create " + m_o.run_dir.string() + ": " + ec.message()));
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

Expected<void> Optimizer::save() {
  return save_run_state(m_o.run_dir, m_state);
}

void Optimizer::commit(const std::string& message, VersionRecord* record) {
  if (!m_git) return;
  auto c = m_git->commit_all(message);
  if (c && record) record->git_commit = *c;
  if (!c) m_o.log("git: " + c.error().message);
}

void Optimizer::finish(const std::string& reason) {
  m_state.status = "finished";
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
                          m.samples, m.error, utc_timestamp(), m.clocks, m.flags, m.device};
}

std::pair<std::string, Measured> Optimizer::measure(const Variant& v) { return measure_all({v}).at(0); }

// Recorded evaluations are reused; the rest are measured together (one per worker where the
// lab has several), each recorded and saved as it is done.
std::vector<std::pair<std::string, Measured>> Optimizer::measure_all(const std::vector<Variant>& vs) {
  std::vector<std::pair<std::string, Measured>> out(vs.size());
  std::vector<Variant> todo;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    auto key = m_lab.evaluation_key(vs[i]);
    if (!key) {
      out[i] = {"", Measured{"compile_failed", 0, 0, 0, key.error().message}};
      continue;
    }
    out[i].first = *key;
    if (const EvaluationRecord* e = m_state.find_evaluation(*key)) {
      out[i].second = Measured{e->status, e->median_s, e->noise, e->samples, e->error, e->clocks, e->flags, e->device};
      continue;
    }
    todo.push_back(vs[i]);
    where.push_back(i);
  }
  if (todo.empty()) return out;
  m_lab.measure_all(todo, [&](std::size_t j, const Measured& m) {
    const Variant& v = todo[j];
    const std::string& key = out[where[j]].first;
    m_state.evaluations[key] = record(key, v.kernel, v.point, m);
    (void)save();  // each as it is done: a run killed in the middle keeps what was measured
    m_o.log(fmt::format("  {:<40} {}{}", v.label(), m.ok() ? human_time(m.median_s) : m.status + ": " + m.error,
                        m.device.empty() ? "" : "  (" + m.device + ")"));
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
  if (!m.ok())
    return Unexpected(bad_input("the starting kernel " + v.label() + " fails (" + m.status + ": " +
                                m.error + "): nothing to optimize from"));
  VersionRecord r;
  r.index = 0;
  r.kernel = v.kernel;
  r.point = v.point;
  r.evaluation = key;
  r.median_s = m.median_s;
  r.noise = m.noise;
  r.flags =
      m.flags;  // the baseline is where the run starts, flagged or not: the flags stay on record
  r.outcome = "baseline";
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
    m_ctx.metrics = m_advice.metrics;
    if (m_advice.headroom.at_roof && !m_agent) {
      finish("at_roof: " + m_advice.headroom.summary);
      return std::optional<Opened>{};
    }
    m_chosen.clear();
    for (const auto& sg : m_advice.suggestions)
      if (sg.within_budget)
        m_chosen.push_back({sg.method, sg.axis, m_catalog.find(sg.method)->priority,
                            sg.strength.value_or(0), sg.why});
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
      !set.methods.empty()        ? "turn on " + fmt::format("{}", fmt::join(set.methods, ", "))
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
  for (int attempt = 0; attempt <= m_o.max_retries && !winner; ++attempt) {
    auto branches = make_branches(o.champ, o.rec.methods, i, attempt);
    if (branches.empty()) break;
    // Measured at once where the lab has several workers; the winner is then compared with
    // the champion on one device (decide).
    auto measured = measure_all(branches);
    for (std::size_t b = 0; b < branches.size(); ++b) {
      auto& [key, m] = measured[b];
      write_variant_files(
          dir / "branches" / ("b" + std::to_string(attempt) + "_" + std::to_string(b)), branches[b],
          m);
      if (m.ok() && (!winner || m.median_s < winner->second.median_s)) {
        winner = {branches[b], m};
        winner_key = key;
      }
    }
  }
  if (!winner) return record_failure(i, o, "every branch failed (after retries)");
  return decide(i, o, winner->first, winner->second, winner_key, nullptr);
}

std::vector<Variant> Optimizer::make_branches(const Variant& champ,
                                              const std::vector<std::string>& methods, int i,
                                              int attempt) {
  if (m_mk) return kernel_branches(*m_mk, champ, methods, i, attempt, m_o.branches);
  std::vector<const KernelSpec*> tunable;
  for (const auto& k : m_p.kernels)
    if (!k.params.empty()) tunable.push_back(&k);
  std::vector<Variant> out;
  int n_kernels = static_cast<int>(tunable.size());
  bool champ_tunable =
      std::any_of(tunable.begin(), tunable.end(), [&](auto* k) { return k->name == champ.kernel; });
  for (int n = 0; n < n_kernels && static_cast<int>(out.size()) < m_o.branches; ++n) {
    // The champion's kernel gets most of the branches; otherwise they are shared out.
    int share = champ_tunable
                    ? (tunable[n]->name == champ.kernel ? m_o.branches - n_kernels + 1 : 1)
                    : m_o.branches / n_kernels + (n < m_o.branches % n_kernels ? 1 : 0);
    for (auto& v : kernel_branches(*tunable[n], champ, {}, i, attempt, std::max(1, share)))
      if (static_cast<int>(out.size()) < m_o.branches) out.push_back(std::move(v));
  }
  return out;
}

std::vector<Variant> Optimizer::kernel_branches(const KernelSpec& kernel, const Variant& champ,
                                                const std::vector<std::string>& methods, int i,
                                                int attempt, int count) {
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
  // The points of this kernel the run has measured: no branch below repeats one (the base
  // aside: it is the champion, or where a switch of methods lands).
  std::vector<ParamPoint> taken{base};
  for (const auto& [key, e] : m_state.evaluations)
    if (e.kernel == k->name) taken.push_back(e.point);
  auto is_taken = [&](const ParamPoint& q) { return std::find(taken.begin(), taken.end(), q) != taken.end(); };
  std::vector<Variant> out;
  // The base first, made feasible where the methods' settings break a constraint (a kernel
  // entered with cp.async off may need a shallower pipeline); then, tuning the champion's
  // kernel, the kernel's declared default with the champion's methods: the author's best guess.
  if (attempt == 0) {
    if (auto b = space.nearest_feasible(base)) out.push_back(Variant{k->name, *b, {}});
    if (champ.kernel == k->name)
      if (auto d = default_point(m_p, *k)) {
        for (const auto& p : switched) (*d)[p] = base.at(p);
        if (auto f = space.nearest_feasible(*d); f && (out.empty() || *f != out.front().point) &&
                                                    !is_taken(*f))  // once it is known, its slot goes to a move
          out.push_back(Variant{k->name, *f, {}});
      }
  }
  if (static_cast<int>(out.size()) >= count) {
    out.resize(static_cast<std::size_t>(count));
    return out;
  }
  std::mt19937_64 rng(m_o.seed * 1000003u + static_cast<std::uint64_t>(i) * 101u +
                      static_cast<std::uint64_t>(attempt) + std::hash<std::string>{}(k->name));
  for (const auto& v : out) taken.push_back(v.point);
  // Half of the rest: one-param moves of the base, where a move breaks a constraint made
  // feasible by one more change (a wider tile with a shallower pipeline); the other half
  // drawn at random, for reach.
  std::vector<ParamPoint> moves;
  for (const auto& [name, values] : space.params)
    for (auto value : values) {
      if (!base.contains(name) || value == base.at(name)) continue;
      ParamPoint q = base;
      q[name] = value;
      for (auto& f : space.repairs(q, name))
        if (!is_taken(f) && std::find(moves.begin(), moves.end(), f) == moves.end()) moves.push_back(std::move(f));
    }
  std::shuffle(moves.begin(), moves.end(), rng);
  std::size_t want_moves = (static_cast<std::size_t>(count) - out.size() + 1) / 2;
  for (std::size_t m = 0; m < moves.size() && m < want_moves; ++m) {
    out.push_back(Variant{k->name, moves[m], {}});
    taken.push_back(moves[m]);
  }
  for (auto& p : space.sample(static_cast<std::size_t>(count) - out.size(), rng, taken))
    out.push_back(Variant{k->name, std::move(p), {}});
  return out;
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

}  // namespace kopt
