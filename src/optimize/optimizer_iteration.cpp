// One iteration of the loop: it opens from the champion (its profile, the bottleneck, the
// methods the advice chose, or a reason to stop), measures the round's branches (retried with
// other tunings when all fail), profiles the measured ones in one session, and hands the
// winner to decide(); and the champion's profile, kept per round.
#include "optimizer_impl.hpp"

namespace kopt::optimize::optimizer_detail {

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

}  // namespace kopt::optimize::optimizer_detail
