// The open's selection context, its advice (analysis/advice.hpp) and hypothesis.md.
#include "optimizer_impl.hpp"

namespace kopt::optimize::optimizer_detail {

SelectionContext Optimizer::selection(const Explanation& e, const Variant& champ) {
  SelectionContext ctx;
  ctx.catalog = &m_catalog;
  ctx.budget = allocate_budget(e.gaps);
  ctx.metrics = trigger_metrics(e.metrics);
  ctx.sm = m_lab.sm();
  ctx.history = m_state.method_history();
  ctx.available.emplace();  // what the problem can still switch on; an agent can write any method
  if (m_agent)
    for (const auto& m : m_catalog.methods) ctx.available->insert(m.id);
  else if (m_mk)
    for (const auto& t : m_mk->methods)
      if (!(champ.kernel == m_mk->name && applies(champ.point, t.on)))
        ctx.available->insert(t.method);
  return ctx;
}

Advice Optimizer::advice_for(const Explanation& e, const Variant& champ, double champ_time) {
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

std::string Optimizer::hypothesis(int i, const Explanation& e, const SelectionContext& ctx,
                                  const std::vector<MethodCandidate>& chosen, const Variant& champ,
                                  double champ_time) {
  std::string out = fmt::format("# Iteration {}: hypothesis\n\n## Hypothesis\n\n", i);
  if (chosen.empty()) {
    std::vector<std::string> tunable;
    for (const auto& k : m_p.kernels)
      if (!k.params.empty() && (!m_mk || &k == m_mk)) tunable.push_back(k.name);
    out += fmt::format(
        "No method to suggest within the budget; varying the params of {} finds a point faster "
        "than "
        "{}.\n",
        tunable.empty() ? champ.kernel : fmt::format("{}", fmt::join(tunable, ", ")),
        human_time(champ_time));
  } else {
    std::vector<std::string> ids;
    for (const auto& c : chosen) ids.push_back(c.method);
    out += fmt::format(
        "Turning on {} in {} closes the gaps it targets and brings the time below {}.\n",
        fmt::join(ids, ", "), m_mk ? m_mk->name : champ.kernel, human_time(champ_time));
  }
  out += fmt::format("\n## Rationale\n\nThe champion {} is {}{}: {}\n\n", champ.label(),
                     bottleneck_name(e.bottleneck.cls),
                     e.bottleneck.limiter.empty() ? "" : " (" + e.bottleneck.limiter + ")",
                     e.bottleneck.rule);
  if (m_advice.headroom.bounding) {
    out += "Headroom: " + m_advice.headroom.summary + ".\n";
    for (Axis a : {Axis::compute, Axis::memory, Axis::latency})
      if (const auto& x = m_advice.headroom.of(a); !x.text.empty())
        out += fmt::format("- {}: {}\n", axis_name(a), x.text);
    out += "\n";
  }
  out += fmt::format("Budget ({}): {} (Δc {:.2f}, Δm {:.2f}, Δl {:.2f}){}.\n\n",
                     budget_formula_name(m_o.budget_formula), ctx.budget.to_string(),
                     ctx.budget.gaps[0], ctx.budget.gaps[1], ctx.budget.gaps[2],
                     m_advice.headroom.bounding
                         ? "; KernelFlow's gaps would give " + m_advice.kernelflow.to_string()
                         : "");
  if (m_advice.stop) out += "Stop recommended: " + m_advice.stop_reason + ".\n\n";
  for (const auto& c : chosen) {
    const Method* m = m_catalog.find(c.method);
    out += fmt::format("- {} ({}, priority {}): triggered by {}, strength {:.2f}. {}\n", c.method,
                       axis_name(c.axis), c.priority, c.why, c.strength, m ? m->playbook : "");
  }
  for (const auto& n : m_experience_notes) out += "- experience: " + n + "\n";
  if (!m_pitfalls.empty()) {
    out += "\n## Pitfalls seen here before\n\nWhat did not pay on " + family() + " at " + chip() +
           " when it was " + std::string(bottleneck_name(e.bottleneck.cls)) +
           " (the experience DB):\n\n";
    for (const auto& p : m_pitfalls) out += "- " + p + "\n";
  }
  out +=
      "\n## Expected\n\nkopt's own predictions, judged at the round's close against the "
      "fastest branch's profile like an agent's `--expect`:\n\n";
  for (const auto& [p, method] : loop_predictions(chosen, ctx.metrics)) {
    if (p.metric == k_time_metric) {
      out += fmt::format("- `{}`: below {} (interleaved comparison, outside the noise)\n", p.text,
                         human_time(champ_time));
      continue;
    }
    const Method* m = m_catalog.find(method);
    const Trigger* t = m ? strongest_trigger(*m, ctx.metrics) : nullptr;
    out += fmt::format("- `{}` ({}: toward {:g}, now {:.4g})\n", p.text, method, t ? t->good : 0.0,
                       metric(ctx.metrics, p.metric).value_or(0));
  }
  return out;
}

std::vector<Optimizer::LoopPrediction> Optimizer::loop_predictions(
    const std::vector<MethodCandidate>& chosen, const MetricValues& metrics) const {
  std::vector<LoopPrediction> out;
  for (const auto& c : chosen) {
    const Method* m = m_catalog.find(c.method);
    const Trigger* t = m ? strongest_trigger(*m, metrics) : nullptr;
    auto now = t ? metric(metrics, t->metric) : std::nullopt;
    if (!now || *now == t->good) continue;
    auto p = parse_prediction(t->metric + (t->good < *now ? ":down" : ":up"), "the loop");
    if (!p || std::any_of(out.begin(), out.end(),
                          [&](const LoopPrediction& q) { return q.prediction.text == p->text; }))
      continue;
    p->branch = k_loop_branch;
    out.push_back({*p, c.method});
  }
  if (auto p = parse_prediction("time:down", "the loop")) {
    p->branch = k_loop_branch;
    out.push_back({*p, ""});
  }
  return out;
}

void Optimizer::judge_loop_predictions(int i, VersionRecord& rec, const Variant& wv,
                                       const std::string& winner_key, const Measured& winner) {
  const Explanation* profile = nullptr;
  if (auto it = m_round_profiles.find(winner_key); it != m_round_profiles.end())
    profile = &it->second.first;
  MetricValues after = profile ? metrics_after(*profile, winner.median_s)
                               : MetricValues{{k_time_metric, winner.median_s}};
  for (auto [p, method] : loop_predictions(m_chosen, m_ctx.metrics)) {
    if (p.metric != k_time_metric && !profile)
      leave_unjudged(p, m_o.profile_branches ? "the fastest branch could not be profiled"
                                             : "branches are not profiled (--no-branch-profiles)");
    else
      judge_prediction(p, m_open_metrics, after);
    if (!method.empty()) p.note += (p.note.empty() ? "" : "; ") + ("the trigger of " + method);
    m_o.log(fmt::format("    prediction {}: {}", p.text, prediction_line(p)));
    rec.predictions.push_back(p);
  }
  if (rec.predictions.empty()) return;
  std::string text = read_text_file(version_dir(i) / "hypothesis.md").value_or("");
  if (auto at = text.find("\n## Judged\n"); at != std::string::npos)
    text.resize(at);  // judged before a kill: this round's judgement replaces it
  text += "\n## Judged\n\nAgainst the fastest branch, " + wv.label() +
          (profile ? " (its profile from the round's ncu session)" : " (its median only)") +
          ":\n\n";
  for (const auto& p : rec.predictions) text += "- " + prediction_line(p) + "\n";
  (void)write_text_atomic(version_dir(i) / "hypothesis.md", text);
}

}  // namespace kopt::optimize::optimizer_detail
