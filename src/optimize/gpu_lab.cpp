#include "kopt/optimize/gpu_lab.hpp"

#include <fmt/format.h>

#include <mutex>
#include <set>

#include "kopt/analysis/target.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/sass_report.hpp"
#include "kopt/report/target_markdown.hpp"
#include "kopt/tune/tuner.hpp"

namespace kopt::optimize {
namespace {

using evaluate::BenchReport;
using evaluate::BenchVariant;
using evaluate::Candidate;
using evaluate::Rigour;

Candidate candidate(const Variant& v) {
  return Candidate{v.kernel, {v.point.begin(), v.point.end()}, v.source};
}

Measured measured(const BenchVariant& bv, const BenchReport& b) {
  Measured m{bv.status,    bv.summary.median, bv.summary.rel_noise,
             bv.summary.n, bv.error,          clocks_text(b.clocks_after)};
  for (const auto& f : bv.flags) m.flags.push_back(flag_text(f));
  return m;
}

// An evaluation that did not come back: a bad input is the problem's (it fails the same way
// every time), anything else kopt's environment's (optimize/lab.hpp, Measured::environment).
Measured failed(const Error& e) {
  Measured m;
  m.status = VariantStatus::error;
  m.error = e.message;
  m.environment = e.kind != ErrorKind::bad_input;
  return m;
}

class GpuLab final : public Lab {
 public:
  GpuLab(evaluate::Evaluator& ev, const MethodCatalog& c, GpuLabOptions o)
      : m_ev(ev), m_p(ev.problem()), m_catalog(c), m_o(std::move(o)) {}

  std::string device_name() override {
    const DeviceInfo* d = m_ev.home_device();
    return d ? d->name : "no device";
  }
  int sm() override {
    const DeviceInfo* d = m_ev.home_device();
    return d ? d->cc_major * 10 + d->cc_minor : 0;
  }
  std::string chip() override {
    const DeviceInfo* d = m_ev.home_device();
    return d ? d->chip() : "no device";
  }
  std::string backend() override {
    const DeviceInfo* d = m_ev.home_device();
    return d ? d->backend : "cuda";
  }

  Expected<std::string> evaluation_key(const Variant& v) override {
    return m_ev.key(candidate(v), m_o.rigour);
  }

  Measured measure(const Variant& v) override { return measure_all({v}, {}).at(0); }

  // One variant per worker at a time: a variant whose worker is lost is measured again on
  // another (evaluator.hpp).
  std::vector<Measured> measure_all(const std::vector<Variant>& vs,
                                    const MeasuredFn& each) override {
    std::vector<std::vector<Candidate>> groups;
    for (const auto& v : vs) groups.push_back({candidate(v)});
    std::vector<Measured> out(vs.size());
    m_ev.spread(groups, m_o.rigour,
                [&](std::size_t i, std::size_t w, const Expected<BenchReport>& b) {
                  Measured m = b ? measured(b->variants.at(0), *b) : failed(b.error());
                  m.device = m_ev.worker_label(w);
                  out[i] = std::move(m);
                  if (each) each(i, out[i]);
                });
    for (auto& n : m_ev.notes())
      if (m_logged_notes.insert(n).second) m_ev.options().log("  " + n);
    return out;
  }

  // The reference kernel as the one kernel of a copy of the problem, timed unchecked (it is
  // what checks).
  std::optional<Measured> measure_reference() override {
    if (m_p.reference.kind != ReferenceKind::cuda) return std::nullopt;
    Problem ref = m_p;
    KernelSpec k = m_p.reference.kernel;
    k.name = "reference";
    ref.kernels = {k};
    std::vector<evaluate::CheckContext> workers;
    for (std::size_t w = 0; w < m_ev.workers(); ++w) workers.push_back(m_ev.worker(w));
    evaluate::Evaluator ref_ev(ref, workers, m_ev.options());
    Rigour unchecked = m_o.rigour;
    unchecked.check = false;
    auto b = ref_ev.side_by_side({{"reference", {}}}, unchecked, m_ev.home_index());
    if (!b) return failed(b.error());
    return measured(b->variants.at(0), *b);
  }

  std::vector<std::pair<std::string, Measured>> measure_baselines() override {
    if (m_p.reference.kind != ReferenceKind::python) return {};
    Rigour unchecked = m_o.rigour;
    unchecked.check = false;
    auto b = m_ev.with_baselines({}, unchecked);
    if (!b) return {{"torch eager", failed(b.error())}};
    std::vector<std::pair<std::string, Measured>> out;
    for (const BenchVariant& bv : b->variants) out.emplace_back(bv.kernel, measured(bv, *b));
    return out;
  }

  std::optional<TargetRecord> target_record() override {
    auto t = target();
    if (!t) return std::nullopt;
    return TargetRecord{to_json(*t), target_markdown(*t)};
  }

  Expected<Comparison> compare(const Variant& a, const Variant& b) override {
    auto rep = m_ev.compare(candidate(a), candidate(b), Rigour::compare(m_o.rigour));
    if (!rep) return Unexpected(rep.error());
    // A variant whose timed launches skipped work has times that compare nothing.
    for (const auto& v : rep->variants)
      if (v.status == VariantStatus::inconsistent)
        return Unexpected(bad_input(v.kernel + " inconsistent: " + v.error));
    if (!rep->comparison)
      return Unexpected(internal_error("no comparison: " + rep->variants.at(0).error));
    return *rep->comparison;
  }

  Expected<Explanation> profile(const Variant& v, const std::filesystem::path& dir) override {
    return profile_all({v}, {dir}, dir).at(0);
  }

  // One ncu session for all of them (profiler.hpp: run_profile_items).
  std::vector<Expected<Explanation>> profile_all(
      const std::vector<Variant>& vs, const std::vector<std::filesystem::path>& dirs,
      const std::filesystem::path& session_dir) override {
    auto all = [&](const Error& e) {
      return std::vector<Expected<Explanation>>(vs.size(), Unexpected(e));
    };
    const DeviceInfo* d = m_ev.home_device();
    bool opencl = d && d->is_opencl();
    if (m_o.ncu.empty() && !opencl)
      return all(environment_error("ncu (Nsight Compute) is not installed"));
    evaluate::ProfileRequest r;
    r.device = m_o.device;
    r.kopt_executable = m_o.kopt_executable;
    r.ncu = m_o.ncu;
    r.ncu_version = m_o.ncu_version;
    std::vector<Candidate> cs;
    for (const auto& v : vs) cs.push_back(candidate(v));
    auto profiles = m_ev.profile(cs, dirs, r, session_dir);
    if (!profiles) return all(profiles.error());
    std::vector<Expected<Explanation>> out;
    for (const auto& k : *profiles)
      if ((k.status != evaluate::ProfileStatus::ok &&
           k.status != evaluate::ProfileStatus::timing_only) ||
          !k.explanation)
        out.push_back(
            Unexpected(environment_error(std::string(name_of(k.status)) + ": " + k.error)));
      else
        out.push_back(*k.explanation);
    return out;
  }

  // tune's screen-then-confirm over the evaluator, at the loop's rigour.
  std::optional<SpaceSearch> search_space(const std::string& kernel,
                                          const std::map<std::string, std::int64_t>& held,
                                          const ParamPoint& start, std::size_t budget) override {
    const KernelSpec* k = m_p.find_kernel(kernel);
    if (!k) return std::nullopt;
    tune::SearchSpace space = tune::SearchSpace::from_kernel(*k, m_p.dim_scope());
    space.hold(held);
    tune::TuneRequest r;
    r.kernel = kernel;
    r.fixed = held;
    r.full = m_o.rigour;
    r.compare_with_default = false;
    r.search.budget.max_evaluations = budget;
    r.search.batch = tune::TuneRequest::k_screen_batch;  // as kopt tune screens
    r.search.strategy =
        space.size() <= budget ? tune::SearchStrategy::exhaustive : tune::SearchStrategy::local;
    r.search.start = {start};
    SpaceSearch out;
    out.space_size = space.size();
    out.strategy = std::string(tune::search_strategy_name(r.search.strategy));
    auto rep = tune::run_tune(r, m_ev);
    if (!rep) {
      out.note = rep.error().message;
      return out;
    }
    out.screened = rep->stages.search.history.size();
    out.confirmed = rep->stages.confirmed.size();
    out.wall_s = rep->wall_s;
    if (const auto& c = rep->stages.champion) {
      out.best = c->point;
      out.best_s = c->summary.median;
    } else {
      out.note = "every point failed (compile, run or check)";
    }
    return out;
  }

  std::map<std::string, SassVerdictKind> verify(const Variant& v,
                                                const std::vector<std::string>& methods) override {
    std::map<std::string, SassVerdictKind> out;
    for (const auto& m : methods) out[m] = SassVerdictKind::unverifiable;
    // OpenCL builds are the driver's business: there is no SASS of them to read.
    const DeviceInfo* d = m_ev.home_device();
    if (methods.empty() || (d && d->is_opencl())) return out;
    evaluate::SassRequest r;
    r.kernels = {v.kernel};
    r.sets = {v.point.begin(), v.point.end()};
    r.methods = methods;
    r.arch = m_ev.arch();
    r.cache_root = m_ev.options().cache_root;
    const evaluate::CheckContext& home = m_ev.home();
    auto rep = evaluate::run_sass(m_ev.problem_for(candidate(v)), r,
                                  evaluate::SassContext{home.compiler, home.runner, m_catalog});
    if (!rep || rep->kernels.empty()) return out;
    for (const auto& verdict : rep->kernels[0].verdicts) out[verdict.method] = verdict.verdict;
    return out;
  }

  // On seed 1 and a secret seed, at the other shape, then under the sanitizer's tools.
  ChampionCheck check_champion(const Variant& v) override {
    evaluate::CheckOptions co;
    co.seeds = 2;
    co.secret_seed = true;
    ChampionCheck out;
    auto checked = m_ev.check(candidate(v), co, /*other_shape=*/true);
    if (!checked) {
      out.wrong = "the check on a secret seed or at the other shape could not run: " +
                  checked.error().message;
      return out;
    }
    if (checked->kernels.empty()) return out;
    const evaluate::KernelCheck& k = checked->kernels[0];
    if (k.status != evaluate::KernelStatus::passed) {
      out.wrong = std::string(evaluate::kernel_status_name(k.status)) + ": " + k.error;
      for (const auto& s : k.seeds)
        if (!s.passed) {
          out.wrong = fmt::format(
              "wrong on {} {} ({}{})", checked->secret_seed == s.seed ? "the secret seed" : "seed",
              s.seed, run_status_name(s.status), s.error.empty() ? "" : ": " + s.error);
          break;
        }
      return out;
    }
    // The build the check just ran, under the tools.
    const DeviceInfo* d = m_ev.home_device();
    if (!m_o.sanitize.tools.empty())
      out.sanitizer = evaluate::sanitize_kernel(
          m_ev.problem_for(candidate(v)), k, d && d->is_opencl(), m_o.sanitize, m_ev.home().runner);
    return out;
  }

  std::optional<double> target_time() override {
    auto t = target();
    if (!t || t->target_s <= 0) return std::nullopt;
    return t->target_s;
  }

  nlohmann::json environment() override {
    nlohmann::json j{
        {"schema_version", 1}, {"recorded_at", utc_timestamp()}, {"kopt_version", KOPT_VERSION}};
    const DeviceInfo* d = m_ev.home_device();
    j["device"] = d ? to_json(*d) : nlohmann::json(nullptr);
    auto toolkit = m_ev.home().compiler.toolkit();
    j["toolkit"] = toolkit ? *toolkit : "unavailable: " + toolkit.error().message;
    j["ncu"] = m_o.ncu.empty()
                   ? nlohmann::json(nullptr)
                   : nlohmann::json{{"path", m_o.ncu.string()}, {"version", m_o.ncu_version}};
    j["bench_options"] = to_json(m_o.rigour.timing);
    return j;
  }

  std::string source_text(const Variant& v) override {
    Problem p = m_ev.problem_for(candidate(v));
    const KernelSpec* k = p.find_kernel(v.kernel);
    if (!k) return {};
    auto text = read_text_file(p.dir / k->source);
    return text ? *text : std::string{};
  }

 private:
  // The roofs every command uses (roofs.hpp): stored ceilings, else measured now (a device
  // without a spec entry, a CPU under OpenCL, has no other roofs, and without roofs there is
  // no target and no stop rule), else the spec table, which compute_target reads itself.
  std::optional<Target> target() {
    const DeviceInfo* d = m_ev.home_device();
    if (!d) return std::nullopt;
    auto spec = find_gpu_spec(d->name);
    evaluate::DeviceRoofs roofs = m_ev.roofs();
    const std::optional<evaluate::StoredCeilings>& stored = roofs.ceilings;
    auto t = compute_target(m_p, default_precision(m_p), spec, d->name,
                            stored ? &stored->result.ceilings : nullptr,
                            stored ? stored->measured_at : "");
    if (!t) return std::nullopt;
    return *t;
  }

  evaluate::Evaluator& m_ev;
  const Problem& m_p;
  const MethodCatalog& m_catalog;
  GpuLabOptions m_o;
  std::set<std::string> m_logged_notes;
};

}  // namespace

std::unique_ptr<Lab> make_gpu_lab(evaluate::Evaluator& ev, const MethodCatalog& catalog,
                                  GpuLabOptions options) {
  return std::make_unique<GpuLab>(ev, catalog, std::move(options));
}

}  // namespace kopt::optimize
