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
