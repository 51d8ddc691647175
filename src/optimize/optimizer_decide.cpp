// The champion decision: the comparison, the checks before a new champion, the SASS
// verdicts, attribution, experience and the iteration's records.
#include "optimizer_impl.hpp"

namespace kopt::optimize::optimizer_detail {

bool Optimizer::passes_champion_checks(VersionRecord& rec, const Variant& v) {
  ChampionCheck checked = m_lab.check_champion(v);
  if (checked.wrong) {
    rec.note = "checked again before it became champion, it was " + *checked.wrong;
    m_o.log("    " + rec.note);
    return false;
  }
  const std::vector<SanitizerOutcome>& outcomes = checked.sanitizer;
  if (outcomes.empty()) return true;
  auto verdict = evaluate::sanitizer_verdict(outcomes);
  rec.sanitizer = fmt::format("{}: {}", *verdict, evaluate::sanitizer_summary(outcomes));
  m_o.log("    compute-sanitizer: " + rec.sanitizer);
  if (verdict != SanitizerStatus::findings) return true;
  rec.note = "compute-sanitizer found errors in a candidate faster than the champion: " +
             evaluate::sanitizer_summary(outcomes);
  return false;
}

PitfallCause Optimizer::failure_cause(const std::vector<Measured>& failed) {
  std::map<PitfallCause, int> n;
  for (const auto& m : failed) switch (m.status) {
      case VariantStatus::ok:
      case VariantStatus::unavailable:
      case VariantStatus::not_run:
      case VariantStatus::error:  // kopt's, not the kernel's
        break;
      case VariantStatus::compile_failed:
        ++n[PitfallCause::does_not_build];
        break;
      case VariantStatus::run_failed:
        ++n[PitfallCause::crashed];
        break;
      case VariantStatus::wrong:
      case VariantStatus::below_floor:
      case VariantStatus::inconsistent:
      case VariantStatus::unverified:
        ++n[PitfallCause::incorrect];
        break;
    }
  auto most = std::max_element(n.begin(), n.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == n.end() ? PitfallCause::crashed : most->first;
}

Expected<void> Optimizer::record_failure(int i, Opened& o, const std::string& why,
                                         PitfallCause cause) {
  m_failure_cause = cause;
  o.rec.kernel = o.champ.kernel;
  o.rec.point = o.champ.point;
  o.rec.source = o.champ.source;
  o.rec.outcome = VersionOutcome::failed;
  o.rec.note = why;
  for (const auto& m : o.rec.methods)
    o.rec.method_outcomes[m] = MethodOutcome::implementation_failed;
  return close_iteration(i, o.rec, false);
}

Expected<void> Optimizer::decide(
    int i, Opened& o, const Variant& wv, const Measured& wm, const std::string& key,
    const std::map<std::string, std::pair<Variant, Measured>>* ablations) {
  VersionRecord& rec = o.rec;
  rec.kernel = wv.kernel;
  rec.point = wv.point;
  rec.source = wv.source;
  rec.evaluation = key;
  rec.median_s = wm.median_s;
  rec.noise = wm.noise;
  rec.before_s = o.champ_time;
  rec.flags = wm.flags;
  bool accepted = false;
  if (wv == o.champ) {
    rec.note = "the best branch is the champion itself";
  } else if (!wm.flags.empty()) {
    // A series of two clusters or a far-fast tail is what a kernel that skips work on some
    // launches produces: such a time is not accepted as a champion's.
    rec.note =
        "flagged: " + wm.flags.front() +
        (wm.flags.size() > 1 ? " (and " + std::to_string(wm.flags.size() - 1) + " more flag(s))"
                             : "") +
        ": a flagged timing is not accepted as the champion; look at its samples (kopt bench "
        "--json)";
  } else {
    auto cmp = m_lab.compare(wv, o.champ);
    if (cmp) {
      rec.verdict = std::string(verdict_name(cmp->verdict));
      rec.ratio = cmp->ratio;
      accepted = cmp->verdict == Verdict::faster;
      if (!accepted)
        rec.note = fmt::format("not faster than the champion outside the noise (ratio {:.4f}, {})",
                               cmp->ratio, rec.verdict);
      else
        accepted = passes_champion_checks(rec, wv);
    } else {
      rec.note = "comparison failed: " + cmp.error().message;
    }
  }
  fs::path dir = version_dir(i);
  if (ablations)
    attribute_agent(rec, wv, wm, *ablations, accepted, dir);
  else
    attribute(rec, wv, wm, rec.methods, dir);
  // Shares of the log speedup: a method's factor over the iteration's, so that shares of one
  // version add the way their factors multiply (a linear share of the gained microseconds
  // credited a method with "387 % of the gain").
  for (const auto& [m, ms] : rec.attribution_ms)
    if (auto share = rec.log_share_pct(m)) rec.attribution_pct[m] = *share;
  rec.outcome = accepted ? VersionOutcome::accepted : VersionOutcome::rejected;
  write_variant_files(dir, wv, wm);
  return close_iteration(i, rec, accepted);
}

void Optimizer::attribute_agent(
    VersionRecord& rec, const Variant& wv, const Measured& wm,
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
      rec.method_outcomes[m] = MethodOutcome::implementation_failed;
      continue;
    }
    auto a = ablations.find(m);
    if (a != ablations.end() && a->second.second.ok()) continue;  // attributed above
    {
      if (!accepted)
        rec.method_outcomes[m] = MethodOutcome::ineffective;
      else if (rec.methods.size() == 1)
        rec.method_outcomes[m] = MethodOutcome::effective;
      else
        unattributed.push_back(m);
    }
  }
  if (!unattributed.empty())
    rec.note += (rec.note.empty() ? "" : "; ") +
                fmt::format("not attributed (add a branch --ablates M for each): {}",
                            fmt::join(unattributed, ", "));
}

std::vector<std::string> Optimizer::consult_experience(const std::string& bottleneck) {
  std::vector<std::string> notes;
  if (!m_o.experience) return notes;
  auto recs = m_o.experience->recommend(family(), chip(), bottleneck);
  if (!recs) {
    notes.push_back("the experience DB could not be read: " + recs.error().message);
    return notes;
  }
  for (const auto& r : *recs) {
    m_ctx.preference[r.method] = r.rank;
    if (r.demoted && m_ctx.available && m_ctx.available->erase(r.method))
      notes.push_back(r.method + " left out: " + r.evidence);
  }
  return notes;
}

std::vector<std::string> Optimizer::pitfalls_here(const std::string& bottleneck) {
  std::vector<std::string> out;
  if (!m_o.experience) return out;
  auto found = m_o.experience->pitfalls(family(), chip(), bottleneck);
  if (!found) return {"the experience DB could not be read: " + found.error().message};
  for (const auto& p : *found) out.push_back(p.line());
  return out;
}

std::string Optimizer::chip() {
  return m_lab.chip();
}

std::string Optimizer::family() const {
  return m_p.family.empty() ? m_p.name : m_p.family;
}

void Optimizer::record_experience(const VersionRecord& rec) {
  if (!m_o.experience) return;
  record_predictions(rec);
  if (rec.method_outcomes.empty()) return;
  std::vector<ExperienceRecord> out;
  for (const auto& [method, cls] : rec.method_outcomes) {
    ExperienceRecord e;
    e.family = family();
    e.backend = m_lab.backend();
    e.chip = chip();
    e.bottleneck = rec.bottleneck;
    e.method = method;
    e.params = rec.point;
    // The speedup is the run's: from the champion when the iteration began to this version,
    // what a reader of `experience list` takes it for (it held the leave-one-out ratio, 1.24x
    // where the run gained 1.06x). The method's own factor stays in attribution_ms, and judges
    // the method where it was measured: the version's other changes are not its doing.
    e.time_after_s = rec.median_s;
    e.time_before_s = rec.before_s > 0 ? rec.before_s : rec.median_s;
    e.speedup = e.time_after_s > 0 ? e.time_before_s / e.time_after_s : 1.0;
    auto a = rec.attribution_ms.find(method);
    auto own = rec.method_factor(method);
    e.verdict = cls == MethodOutcome::implementation_failed
                    ? ExperienceVerdict::failure
                    : experience_verdict(own.value_or(e.speedup));
    if (auto s = m_last_sass.find(method); s != m_last_sass.end()) e.sass_verdict = s->second;
    e.cause = e.sass_verdict == "missing"                   ? PitfallCause::no_sass_change
              : cls == MethodOutcome::implementation_failed ? m_failure_cause
              : *e.verdict == ExperienceVerdict::regression ? PitfallCause::slower
              : *e.verdict != ExperienceVerdict::success    ? PitfallCause::no_gain
                                                            : PitfallCause::none;
    e.attribution_ms = a != rec.attribution_ms.end() ? a->second : 0;
    e.run_id = m_state.problem + "@" + m_state.created_at;
    e.date = utc_timestamp();
    e.note = fmt::format("v{} {}: {}", rec.index, rec.outcome, cls);
    out.push_back(e);
  }
  if (auto r = m_o.experience->add(out); !r) m_o.log("experience DB: " + r.error().message);
}

void Optimizer::record_predictions(const VersionRecord& rec) {
  std::vector<PredictionRecord> out;
  for (const auto& p : rec.predictions) {
    PredictionRecord r;
    r.family = family();
    r.chip = chip();
    r.bottleneck = rec.bottleneck;
    r.prediction = p;
    r.accepted = rec.outcome == VersionOutcome::accepted &&
                 (p.branch == k_loop_branch || m_candidate_branch == p.branch);
    if (p.branch == k_loop_branch) {  // kopt's own, for the round's methods
      r.methods = rec.methods;
      r.hypothesis = rec.hypothesis;
    }
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
    if (auto r = m_o.experience->add_predictions(out); !r)
      m_o.log("experience DB: " + r.error().message);
}

Expected<void> Optimizer::close_iteration(int i, VersionRecord rec, bool accepted) {
  record_experience(rec);
  (void)write_text_atomic(version_dir(i) / "attribution.json",
                          json{{"methods", rec.methods},
                               {"method_outcomes", rec.method_outcomes},
                               {"attribution_ms", rec.attribution_ms},
                               {"attribution_pct", rec.attribution_pct},
                               {"outcome", rec.outcome},
                               {"note", rec.note}}
                              .dump(2));
  m_state.versions.push_back(rec);
  m_state.iteration = i;
  m_state.no_improvement = accepted ? 0 : m_state.no_improvement + 1;
  if (auto s = save(); !s) return s;
  commit(fmt::format("v{}: {} {}{}", i, rec.outcome, Variant{rec.kernel, rec.point}.label(),
                     rec.median_s > 0 ? ", " + human_time(rec.median_s) : ""),
         &m_state.versions.back());
  if (auto s = save(); !s) return s;
  m_o.log(
      fmt::format("iteration {}: {}{}", i, rec.outcome, rec.note.empty() ? "" : " — " + rec.note));
  if (m_state.no_improvement >= m_o.patience)
    finish(fmt::format("no improvement for {} iterations", m_state.no_improvement));
  return {};
}

void Optimizer::attribute(VersionRecord& rec, const Variant& wv, const Measured& wm,
                          const std::vector<std::string>& methods, const fs::path& dir) {
  const KernelSpec* k = m_p.find_kernel(wv.kernel);
  std::vector<std::string> applied;
  for (const auto& m : methods)
    if (const MethodToggle* t = k ? k->find_method(m) : nullptr; t && applies(wv.point, t->on))
      applied.push_back(m);
  auto sass = verify_in_sass(wv, applied, dir);
  for (const auto& m : applied) {
    Variant ablated{wv.kernel, with(wv.point, k->find_method(m)->off)};
    auto [key, am] = measure(ablated);
    write_variant_files(dir / "ablations" / m, ablated, am);
    auto verdict = sass.find(m);
    if (verdict != sass.end() && verdict->second == SassVerdictKind::missing) {
      rec.method_outcomes[m] = MethodOutcome::implementation_failed;
      continue;
    }
    if (!am.ok()) {  // without the method the kernel fails: it is needed
      rec.method_outcomes[m] = MethodOutcome::effective;
      continue;
    }
    attribute_one(rec, m, wm, am);
  }
}

std::map<std::string, SassVerdictKind> Optimizer::verify_in_sass(
    const Variant& wv, const std::vector<std::string>& methods, const fs::path& dir) {
  auto sass = m_lab.verify(wv, methods);
  json sass_json = json::object();
  m_last_sass.clear();
  for (const auto& [m, v] : sass) sass_json[m] = m_last_sass[m] = std::string(sass_verdict_name(v));
  (void)write_text_atomic(dir / "sass.json", sass_json.dump(2));
  return sass;
}

void Optimizer::attribute_one(VersionRecord& rec, const std::string& m, const Measured& winner,
                              const Measured& without) {
  double saved = without.median_s - winner.median_s;
  rec.attribution_ms[m] = saved * 1e3;
  double noise = std::max({winner.noise, without.noise, 0.01});
  rec.method_outcomes[m] =
      saved > noise * winner.median_s ? MethodOutcome::effective : MethodOutcome::ineffective;
}

}  // namespace kopt::optimize::optimizer_detail
