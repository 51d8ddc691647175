// The agent's steps (kopt iter), the proposer hook, and the branches they bring: measured,
// their predictions judged.
#include "optimizer_impl.hpp"

namespace kopt::optimize::optimizer_detail {

std::string Optimizer::shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Expected<void> Optimizer::iterate_with_proposer(int i, Opened& o) {
  fs::path dir = version_dir(i);
  fs::path proposal = dir / "proposal";
  fs::create_directories(proposal);
  json analysis{
      {"schema_version", 1},
      {"iteration", i},
      {"problem", m_p.name},
      {"problem_dir", fs::absolute(m_p.dir).string()},
      {"run_dir", m_o.run_dir.string()},
      {"champion",
       {{"kernel", o.champ.kernel}, {"params", o.champ.point}, {"median_s", o.champ_time}}},
      {"bottleneck", o.rec.bottleneck},
      {"evidence", o.rec.evidence},
      {"budget", m_ctx.budget.to_string()},
      {"hypothesis_file", (dir / "hypothesis.md").string()},
      {"profile_dir", (dir / "profile").string()}};
  if (m_advice.headroom.bounding || m_advice.stop) analysis["advice"] = to_json(m_advice);
  analysis["pitfalls"] = m_pitfalls;
  for (const auto& c : m_chosen)
    analysis["suggested_methods"].push_back(
        {{"method", c.method}, {"axis", std::string(axis_name(c.axis))}, {"why", c.why}});
  for (const auto& k : m_p.kernels)
    analysis["kernels"].push_back({{"name", k.name},
                                   {"source", (fs::absolute(m_p.dir) / k.source).string()},
                                   {"entry", k.entry}});
  fs::path analysis_file = dir / "analysis.json";
  (void)write_text_atomic(analysis_file, analysis.dump(2));
  std::string script = "export KOPT_ANALYSIS=" + shell_quote(analysis_file.string()) +
                       " KOPT_PROPOSAL_DIR=" + shell_quote(proposal.string()) +
                       " KOPT_RUN_DIR=" + shell_quote(m_o.run_dir.string()) +
                       " KOPT_ITERATION=" + std::to_string(i) +
                       " KOPT_PROBLEM_DIR=" + shell_quote(fs::absolute(m_p.dir).string()) + "; (" +
                       m_o.proposer + ") < \"$KOPT_ANALYSIS\"";
  SystemCommandRunner runner;
  m_o.log("iteration " + std::to_string(i) + ": asking the proposer");
  CommandResult r =
      runner.run({"/bin/sh", "-c", script},
                 std::chrono::milliseconds(static_cast<long>(m_o.proposer_timeout_s * 1000)));
  auto tail = [](const std::string& s) {
    return s.size() > 4000 ? "...\n" + s.substr(s.size() - 4000) : s;
  };
  (void)write_text_atomic(dir / "proposer.log", tail(r.out) + "\n--- stderr ---\n" + tail(r.err));
  if (!r.ok())
    return record_failure(
        i, o, r.timed_out ? "the proposer timed out" : "the proposer failed: " + describe(r),
        PitfallCause::none);
  auto branches = proposed_branches(proposal, o.champ);
  if (!branches) return record_failure(i, o, branches.error().message, PitfallCause::none);
  if (branches->empty())
    return record_failure(i, o, "the proposer wrote no kernel files", PitfallCause::none);
  for (std::size_t k = 0; k < branches->size(); ++k)
    (*branches)[k].id = "p" + std::to_string(k + 1);
  Outcome out = measure_branches(*branches);
  judge_predictions(i, o.rec, *branches, out, m_open_metrics);
  if (!out.winner) {
    PitfallCause cause = failure_cause(out.measured);
    return record_failure(i, o, fmt::format("every proposed branch failed: {}", cause), cause);
  }
  o.rec.methods = out.methods;
  return decide(i, o, out.winner->first, out.winner->second, out.key, &out.ablations);
}

Optimizer::Outcome Optimizer::measure_branches(const std::vector<BranchRecord>& branches) {
  Outcome out;
  std::vector<Variant> vs;
  for (const BranchRecord& b : branches) vs.push_back(Variant{b.kernel, b.point, b.source});
  auto measured = measure_all(vs);  // at once where the lab has several workers
  for (std::size_t k = 0; k < branches.size(); ++k) {
    const BranchRecord& b = branches[k];
    const Variant& v = vs[k];
    auto& [key, m] = measured[k];
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

MetricValues Optimizer::metrics_after(const Explanation& e, double median_s) {
  MetricValues mv = advice_metrics(e, compute_headroom(e, median_s));
  mv[k_time_metric] = median_s;
  return mv;
}

void Optimizer::judge_predictions(int i, VersionRecord& rec,
                                  const std::vector<BranchRecord>& branches, const Outcome& out,
                                  const MetricValues& before) {
  // Every branch that measured and predicts a counter is profiled, all in one ncu session: its
  // predictions are judged by its own profile (the candidate's folder keeps its old name).
  std::vector<std::size_t> wanted;
  std::vector<Variant> vs;
  std::vector<fs::path> dirs;
  for (std::size_t k = 0; k < branches.size(); ++k) {
    bool counter = std::any_of(branches[k].expect.begin(), branches[k].expect.end(),
                               [](const Prediction& p) { return p.metric != k_time_metric; });
    if (!counter || !out.measured.at(k).ok()) continue;
    wanted.push_back(k);
    vs.push_back(Variant{branches[k].kernel, branches[k].point, branches[k].source});
    bool candidate = out.winner_index && *out.winner_index == k;
    dirs.push_back(candidate ? version_dir(i) / "candidate-profile"
                             : version_dir(i) / "branch-profiles" / branches[k].id);
  }
  std::map<std::size_t, Expected<MetricValues>> after;  // by branch
  if (!vs.empty()) {
    auto profiles = m_lab.profile_all(vs, dirs, version_dir(i) / "branch-profiles");
    for (std::size_t w = 0; w < wanted.size(); ++w) {
      const auto& e = profiles.at(w);
      if (!e) {
        after.emplace(wanted[w], Unexpected(e.error()));
        continue;
      }
      after.emplace(wanted[w], metrics_after(*e, out.measured[wanted[w]].median_s));
    }
  }
  for (std::size_t k = 0; k < branches.size(); ++k)
    for (Prediction p : branches[k].expect) {
      p.branch = branches[k].id;
      const Measured& m = out.measured.at(k);
      auto mine = after.find(k);
      if (!m.ok())
        leave_unjudged(p, "the branch did not measure: " + std::string(name_of(m.status)));
      else if (p.metric == k_time_metric)
        judge_prediction(p, before, {{k_time_metric, m.median_s}});
      else if (mine != after.end() && mine->second)
        judge_prediction(p, before, *mine->second);
      else
        leave_unjudged(
            p, p.branch + " could not be profiled" +
                   (mine != after.end() ? ": " + mine->second.error().message : std::string()));
      m_o.log(fmt::format("    prediction {} {}: {}{}", p.branch, p.text, p.verdict,
                          p.note.empty() ? "" : " (" + p.note + ")"));
      rec.predictions.push_back(p);
    }
  if (out.winner_index) rec.agent_hypothesis = branches[*out.winner_index].hypothesis;
  m_closing_branches = branches;
  m_candidate_branch = out.winner_index ? branches[*out.winner_index].id : "";
  if (!rec.predictions.empty() ||
      std::any_of(branches.begin(), branches.end(), [](auto& b) { return !b.hypothesis.empty(); }))
    write_branch_hypotheses(version_dir(i) / "hypothesis.md", branches, rec.predictions,
                            out.winner_index ? branches[*out.winner_index].id : "");
}

std::string Optimizer::describe(const CommandResult& r) {
  if (!r.started) return "could not start /bin/sh";
  return r.signal ? "signal " + std::to_string(r.signal)
                  : "exit code " + std::to_string(r.exit_code);
}

Expected<std::vector<BranchRecord>> Optimizer::proposed_branches(const fs::path& dir,
                                                                 const Variant& champ) {
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
      return Unexpected(
          bad_input(std::string("branches.json is not JSON: ") + e.what(), manifest.string()));
    }
    if (!j.is_array())
      return Unexpected(bad_input("branches.json must be an array", manifest.string()));
    for (const auto& e : j) {
      BranchRecord b;
      b.kernel = e.value("kernel", default_kernel);
      b.source = (dir / e.value("file", "")).string();
      b.point = base_point(b.kernel);
      if (e.contains("set") && e["set"].is_object())
        for (auto it = e["set"].begin(); it != e["set"].end(); ++it)
          b.point[it.key()] = it.value().get<std::int64_t>();
      b.methods = e.value("methods", std::vector<std::string>{});
      b.ablates = e.value("ablates", "");
      b.hypothesis = e.value("hypothesis", "");
      if (auto x = e.find("expect"); x != e.end()) {
        std::string field = fmt::format("branches.json[{}].expect", out.size());
        if (!x->is_array())
          return Unexpected(
              bad_input("expected a list of METRIC:up|down[:AMOUNT]", manifest.string(), 0, field));
        for (const auto& t : *x) {
          auto p = t.is_string()
                       ? parse_prediction(t.get<std::string>(), field)
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

Expected<RunState> Optimizer::agent_open() {
  m_agent = true;
  if (auto r = open(); !r) return Unexpected(r.error());
  if (m_state.versions.empty())
    if (auto r = baseline(); !r) return Unexpected(r.error());
  if (m_state.open)
    return Unexpected(
        bad_input(fmt::format("iteration {} is open: add branches (kopt iter branch) and close it "
                              "(kopt iter close) first",
                              m_state.open->index)));
  if (m_state.status == RunPhase::finished)
    return Unexpected(bad_input("the run is finished (" + m_state.stop_reason + ")"));
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
      it.suggestions.push_back(fmt::format("{}. {} ({}{}): {}; expect {}", sg.rank, sg.method,
                                           axis_name(sg.axis), sg.triggered ? ", triggered" : "",
                                           sg.why, sg.expect()));
  } else {
    for (const auto& c : m_chosen) it.suggestions.push_back(c.method + ": " + c.why);
  }
  it.pitfalls = m_pitfalls;
  for (const auto& [name, v] : m_open_metrics)
    if (std::isfinite(v)) it.metrics[name] = v;
  fs::create_directories(version_dir(i) / "branches");
  m_state.open = it;
  if (auto s = save(); !s) return Unexpected(s.error());
  return m_state;
}

Expected<RunState> Optimizer::agent_branch(const BranchRecord& given,
                                           const std::filesystem::path& file) {
  if (auto r = open_existing(); !r) return Unexpected(r.error());
  if (!m_state.open) return Unexpected(bad_input("no open iteration: kopt iter open first"));
  BranchRecord b = given;
  if (b.kernel.empty()) b.kernel = m_mk ? m_mk->name : m_state.champion()->kernel;
  const KernelSpec* k = m_p.find_kernel(b.kernel);
  if (!k)
    return Unexpected(
        bad_input("--kernel " + b.kernel + ": no such kernel", m_p.spec_path.string()));
  for (const auto& m : b.methods)
    if (!m_catalog.find(m))
      return Unexpected(
          bad_input("--method " + m + ": not in the method catalog", "", 0, "--method"));
  if (!b.ablates.empty() && !m_catalog.find(b.ablates))
    return Unexpected(
        bad_input("--ablates " + b.ablates + ": not in the method catalog", "", 0, "--ablates"));
  auto text = read_text_file(file);
  if (!text)
    return Unexpected(bad_input("cannot read the branch: " + text.error().message, file.string()));
  // The branch is in the language of the kernel it replaces, and holds the kernel's entry.
  const KernelLanguage kernel_language = language_of(k->source);
  auto lang = kernel_language_of(file);
  if (lang && *lang != kernel_language)
    return Unexpected(bad_input("a " + std::string(kernel_language_name(*lang)) +
                                    " branch, but kernel '" + k->name + "' is " +
                                    std::string(kernel_language_name(kernel_language)) + " (" +
                                    k->source.filename().string() + ")",
                                file.string(), 1));
  const char* qualifier = k->abi == KernelSpec::Abi::solve            ? "extern \"C\""
                          : kernel_language == KernelLanguage::opencl ? "__kernel"
                          : kernel_language == KernelLanguage::triton ? "def "
                                                                      : "__global__";
  if (text->find(qualifier) == std::string::npos || text->find(k->entry) == std::string::npos)
    return Unexpected(bad_input(
        "not a kernel of '" + k->name + "': no " + qualifier + " function named " + k->entry,
        file.string(), 1));
  auto point = resolve_point(m_p, *k, {b.point.begin(), b.point.end()});
  if (!point) return Unexpected(point.error());
  b.point = *point;
  b.id = "a" + std::to_string(m_state.open->branches.size() + 1);
  for (auto& p : b.expect) {
    if (auto why = unknown_metric(p, m_state.open->metrics))
      return Unexpected(bad_input(*why, "", 0, "--expect"));
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

Expected<RunState> Optimizer::agent_close() {
  if (auto r = open_existing(); !r) return Unexpected(r.error());
  if (!m_state.open) return Unexpected(bad_input("no open iteration: kopt iter open first"));
  OpenIteration it = *m_state.open;
  int candidates = 0;
  for (const auto& b : it.branches) candidates += b.ablates.empty();
  if (candidates == 0)
    return Unexpected(bad_input("no branch to evaluate: kopt iter branch RUN --file KERNEL.cu"));
  auto opened = from_champion();
  if (!opened) return Unexpected(opened.error());
  Opened& o = *opened;
  o.rec = it.draft;
  Outcome out = measure_branches(it.branches);
  judge_predictions(it.index, o.rec, it.branches, out, it.metrics);
  o.rec.methods = out.winner ? out.methods : std::vector<std::string>{};
  m_state.open.reset();
  Expected<void> done =
      out.winner
          ? decide(it.index, o, out.winner->first, out.winner->second, out.key, &out.ablations)
          : record_failure(it.index, o,
                           out.ablations.empty() ? "every branch failed"
                                                 : "every branch failed; the ablations were not "
                                                   "attributed: no branch measured to compare with",
                           failure_cause(out.measured));
  if (!done) return Unexpected(done.error());
  return m_state;
}

Expected<RunState> Optimizer::agent_finalize() {
  if (auto r = open_existing(); !r) return Unexpected(r.error());
  if (m_state.status != RunPhase::finished)
    finish(m_state.open
               ? "finalized with iteration " + std::to_string(m_state.open->index) + " left open"
               : "finalized");
  return m_state;
}

Expected<void> Optimizer::open_existing() {
  if (!std::filesystem::exists(run_state_path(m_o.run_dir)))
    return Unexpected(bad_input("no run in " + m_o.run_dir.string() +
                                ": kopt iter open PROBLEM --run DIR starts one"));
  m_o.resume = true;
  return open();
}

}  // namespace kopt::optimize::optimizer_detail
