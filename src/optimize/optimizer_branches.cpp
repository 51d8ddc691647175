// The loop's branches of a round: tunings of the champion's kernel (and of the other tunable
// kernels), the methods the iteration chose switched on.
#include "optimizer_impl.hpp"

namespace kopt::optimize::optimizer_detail {

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
  // The search module's space: params a method switches are held at the base's values, so
  // that a method's effect is its own; a round that tunes only (no method chosen) screens the
  // whole space, method params included, as `kopt tune` does.
  std::set<std::string> switched;
  if (!methods.empty())
    for (const auto& t : k->methods)
      for (const auto& [p, v] : t.on) switched.insert(p);
  ParamPoint held;
  for (const auto& p : switched)
    if (auto it = base.find(p); it != base.end()) held[p] = it->second;
  tune::SearchSpace space = tune::SearchSpace::from_kernel(*k, m_p.dim_scope());
  space.hold(held);
  // The points of this kernel the run has measured (and the champion among them).
  std::vector<ParamPoint> taken;
  for (const auto& [key, e] : m_state.evaluations)
    if (e.kernel == k->name) taken.push_back(e.point);
  auto is_taken = [&](const ParamPoint& q) {
    return std::find(taken.begin(), taken.end(), q) != taken.end();
  };
  std::vector<Variant> out;
  // The first round that tunes this kernel at these settings screens its space (tune's
  // evaluator): its champion comes first, unless it is measured already.
  if (attempt == 0)
    if (auto best = search_space(*k, space, base, held);
        best && !is_taken(*best) && !(champ.kernel == k->name && champ.point == *best))
      out.push_back(Variant{k->name, *best, {}});
  // No branch below repeats a measured point, nor the base (it is the champion, or where a
  // switch of methods lands).
  taken.push_back(base);
  // A space screened exhaustively has nothing left to draw: its champion stands for it.
  if (std::find(m_state.exhausted_spaces.begin(), m_state.exhausted_spaces.end(),
                space_key(*k, held)) != m_state.exhausted_spaces.end()) {
    if (static_cast<int>(out.size()) > count) out.resize(static_cast<std::size_t>(count));
    return out;
  }
  // The base, made feasible where the methods' settings break a constraint (a kernel
  // entered with cp.async off may need a shallower pipeline); then, tuning the champion's
  // kernel, the kernel's declared default with the champion's methods: the author's best guess.
  if (attempt == 0) {
    if (auto b = space.nearest_feasible(base);
        b && std::none_of(out.begin(), out.end(), [&](const Variant& v) { return v.point == *b; }))
      out.push_back(Variant{k->name, *b, {}});
    if (champ.kernel == k->name)
      if (auto d = default_point(m_p, *k)) {
        for (const auto& p : switched) (*d)[p] = base.at(p);
        if (auto f = space.nearest_feasible(*d);
            f && (out.empty() || *f != out.front().point) &&
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
        if (!is_taken(f) && std::find(moves.begin(), moves.end(), f) == moves.end())
          moves.push_back(std::move(f));
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

std::string Optimizer::space_key(const KernelSpec& k, const ParamPoint& held) {
  return k.name + (held.empty() ? "" : " " + point_to_string(held));
}

bool Optimizer::space_unscreened(const std::string& kernel) const {
  const KernelSpec* k = m_p.find_kernel(kernel);
  if (!k || m_o.space_budget == 0 || k->params.empty()) return false;
  if (tune::SearchSpace::from_kernel(*k, m_p.dim_scope()).size() <= 1) return false;
  return std::find(m_state.searched_spaces.begin(), m_state.searched_spaces.end(),
                   space_key(*k, {})) == m_state.searched_spaces.end();
}

std::optional<ParamPoint> Optimizer::search_space(const KernelSpec& k,
                                                  const tune::SearchSpace& space,
                                                  const ParamPoint& base, const ParamPoint& held) {
  if (m_o.space_budget == 0 || space.size() <= 1) return std::nullopt;
  std::string key = space_key(k, held);
  if (std::find(m_state.searched_spaces.begin(), m_state.searched_spaces.end(), key) !=
      m_state.searched_spaces.end())
    return std::nullopt;
  auto found = m_lab.search_space(k.name, {held.begin(), held.end()}, base, m_o.space_budget);
  m_state.searched_spaces.push_back(key);  // asked once: a lab that cannot is not asked again
  if (found && found->strategy == "exhaustive" && found->note.empty())
    m_state.exhausted_spaces.push_back(key);
  (void)save();
  if (!found) return std::nullopt;
  if (!found->best) {
    m_o.log(fmt::format("  space of {}: {} of {} points screened, none passed: {}", key,
                        found->screened, found->space_size, found->note));
    return std::nullopt;
  }
  m_o.log(
      fmt::format("  space of {}: {} of {} points screened ({}), {} confirmed, best {} at {} "
                  "({:.1f} s)",
                  key, found->screened, found->space_size, found->strategy, found->confirmed,
                  point_to_string(*found->best), human_time(found->best_s), found->wall_s));
  return found->best;
}

}  // namespace kopt::optimize::optimizer_detail
