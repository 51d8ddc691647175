#include "kopt/engine/gpu_lab.hpp"

#include <fmt/format.h>

#include <deque>
#include <mutex>
#include <set>

#include "kopt/analysis/target.hpp"
#include "kopt/backend/build_cache.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/engine/dispatcher.hpp"
#include "kopt/engine/profiler.hpp"
#include "kopt/engine/roofs.hpp"
#include "kopt/engine/sass_report.hpp"
#include "kopt/engine/variant_jobs.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/report/target_markdown.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt {
namespace {

std::map<std::string, std::int64_t> sets_of(const ParamPoint& p) {
  return {p.begin(), p.end()};
}

class GpuLab final : public Lab {
 public:
  GpuLab(const Problem& p, const MethodCatalog& c, GpuLabOptions o, std::vector<CheckContext> ctxs)
      : m_p(p),
        m_catalog(c),
        m_o(std::move(o)),
        m_ctxs(std::move(ctxs)),
        m_dispatch(m_ctxs.size()) {}

  std::string device_name() override { return device() ? device()->name : "no device"; }
  int sm() override { return device() ? device()->cc_major * 10 + device()->cc_minor : 0; }

  Expected<std::string> evaluation_key(const Variant& v) override {
    const Problem& p = problem_for(v);
    const KernelSpec* k = p.find_kernel(v.kernel);
    if (!k) return Unexpected(bad_input("no kernel named '" + v.kernel + "'"));
    BuildCache cache(home().compiler, m_o.cache_root / "builds");
    auto build_key = cache.key(compile_request(p, *k, v.point, arch()));
    if (!build_key) return Unexpected(build_key.error());
    Sha256 h;
    h.field("kopt-evaluation-v2").field(*build_key).field(device_name());
    // The launch is kopt.toml's, not the build's: a grid, block, shared-memory size or argument
    // changed there is another measurement of the same build.
    auto launch =
        resolve_launch(p, *k, v.point, device() ? device()->limits : architectural_limits());
    if (!launch) {
      h.field("launch error").field(launch.error().message);  // measured, it fails with this
    } else {
      h.field(dim3_to_string(launch->grid))
          .field(dim3_to_string(launch->block))
          .field(std::to_string(launch->shared_mem));
      for (const auto& a : launch->args) h.field(to_json(a).dump());
    }
    for (const auto& d : m_p.dims) h.field(d.name).field(std::to_string(d.value));
    h.field(to_json(m_o.bench).dump());
    return h.hex().substr(0, 32);
  }

  Measured measure(const Variant& v) override { return measure_all({v}, {}).at(0); }

  // One variant per worker at a time, handed out by the dispatcher: a variant whose worker is
  // lost is measured again on another (dispatcher.hpp).
  std::vector<Measured> measure_all(const std::vector<Variant>& vs,
                                    const MeasuredFn& each) override {
    std::vector<Measured> out(vs.size());
    std::mutex done;
    auto finish = [&](std::size_t i, Measured m) {
      std::lock_guard lock(done);
      out[i] = std::move(m);
      if (each) each(i, out[i]);
    };
    m_dispatch.run(
        vs.size(),
        [&](std::size_t i, std::size_t w) {
          auto b = run_bench(problem_for(vs[i]),
                             request({{vs[i].kernel, sets_of(vs[i].point)}}, false), m_ctxs[w]);
          if (auto lost = lost_after(b, m_ctxs[w].worker)) return DispatchOutcome{true, *lost};
          Measured m =
              b ? measured(b->variants.at(0), *b) : Measured{"error", 0, 0, 0, b.error().message};
          if (m_ctxs.size() > 1) m.device = worker_label(w, m_ctxs[w].worker);
          finish(i, std::move(m));
          return DispatchOutcome{};
        },
        [&](std::size_t i, const std::string& why) {
          finish(i, Measured{"error", 0, 0, 0, why});
        });
    for (auto& n : m_dispatch.notes())
      if (m_logged_losses.insert(n).second) m_o.log("  " + n);
    return out;
  }

  std::optional<Measured> measure_reference() override {
    if (m_p.reference.kind != ReferenceKind::cuda) return std::nullopt;
    // The reference kernel as the one kernel of a copy of the problem, timed unchecked (it
    // is what checks).
    Problem ref = m_p;
    KernelSpec k = m_p.reference.kernel;
    k.name = "reference";
    ref.kernels = {k};
    BenchRequest r = request({{"reference", {}}}, false);
    r.check_first = false;
    auto b = run_bench(ref, r, home());
    if (!b) return Measured{"error", 0, 0, 0, b.error().message, ""};
    const BenchVariant& bv = b->variants.at(0);
    return measured(bv, *b);
  }

  std::vector<std::pair<std::string, Measured>> measure_baselines() override {
    if (m_p.reference.kind != ReferenceKind::python) return {};
    Problem baselines = m_p;  // no kernel: bench times the PyTorch rows alone
    baselines.kernels.clear();
    BenchRequest r = request({}, false);
    r.check_first = false;
    r.vs_torch = true;
    auto b = run_bench(baselines, r, home());
    if (!b) return {{"torch eager", Measured{"error", 0, 0, 0, b.error().message, ""}}};
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
    if (!a.source.empty() && !b.source.empty() && a.source != b.source && a.kernel == b.kernel)
      return Unexpected(
          bad_input("two branch sources of one kernel cannot be compared in one bench"));
    BenchRequest r = request({{a.kernel, sets_of(a.point)}, {b.kernel, sets_of(b.point)}}, true);
    r.options.rule.max_time_s = m_o.compare_max_time_s;
    // Only one source can replace the kernel's: the branch's (the champion is the problem's).
    auto rep = run_bench(problem_for(a.source.empty() ? b : a), r, home());
    if (!rep) return Unexpected(rep.error());
    // A variant whose timed launches skipped work has times that compare nothing.
    for (const auto& v : rep->variants)
      if (v.status == "inconsistent")
        return Unexpected(bad_input(v.kernel + " " + v.status + ": " + v.error));
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
    bool opencl = device() && device()->is_opencl();
    if (m_o.ncu.empty() && !opencl)
      return all(environment_error("ncu (Nsight Compute) is not installed"));
    ProfileRequest r;
    r.arch = m_o.arch;
    r.device = m_o.device;
    r.cache_root = m_o.cache_root;
    r.kopt_executable = m_o.kopt_executable;
    r.ncu = m_o.ncu;
    r.ncu_version = m_o.ncu_version;
    std::deque<Problem> problems;  // a branch's source makes its own problem
    std::vector<ProfileItem> items;
    for (std::size_t i = 0; i < vs.size(); ++i)
      items.push_back({&problems.emplace_back(problem_for(vs[i])), vs[i].kernel,
                       sets_of(vs[i].point), dirs.at(i)});
    auto profiles = run_profile_items(items, r, home(), session_dir);
    if (!profiles) return all(profiles.error());
    std::vector<Expected<Explanation>> out;
    for (const KernelProfile& k : *profiles)
      if ((k.status != "ok" && k.status != "timing_only") || !k.explanation)
        out.push_back(Unexpected(environment_error(k.status + ": " + k.error)));
      else
        out.push_back(*k.explanation);
    return out;
  }

  std::map<std::string, SassVerdictKind> verify(const Variant& v,
                                                const std::vector<std::string>& methods) override {
    std::map<std::string, SassVerdictKind> out;
    for (const auto& m : methods) out[m] = SassVerdictKind::unverifiable;
    // OpenCL builds are the driver's business: there is no SASS of them to read.
    if (methods.empty() || (device() && device()->is_opencl())) return out;
    SassRequest r;
    r.kernels = {v.kernel};
    r.sets = sets_of(v.point);
    r.methods = methods;
    r.arch = arch();
    r.cache_root = m_o.cache_root;
    auto rep = run_sass(problem_for(v), r, SassContext{home().compiler, home().runner, m_catalog});
    if (!rep || rep->kernels.empty()) return out;
    for (const auto& verdict : rep->kernels[0].verdicts) out[verdict.method] = verdict.verdict;
    return out;
  }

  ChampionCheck check_champion(const Variant& v) override {
    const Problem& p = problem_for(v);
    CheckOptions co;
    co.kernels = {v.kernel};
    co.sets = sets_of(v.point);
    co.seeds = 2;
    co.secret_seed = true;
    co.arch = m_o.arch;
    co.cache_root = m_o.cache_root;
    ChampionCheck out;
    auto checked = run_check(p, co, home());
    if (!checked) {
      out.wrong = "the check on a secret seed could not run: " + checked.error().message;
      return out;
    }
    if (checked->kernels.empty()) return out;
    if (auto shaped = check_other_shape(p, co, home(), *checked); !shaped) {
      out.wrong = "the check at the other shape could not run: " + shaped.error().message;
      return out;
    }
    const KernelCheck& k = checked->kernels[0];
    if (k.status != KernelStatus::passed) {
      out.wrong = std::string(kernel_status_name(k.status)) + ": " + k.error;
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
    if (!m_o.sanitize.tools.empty())
      out.sanitizer =
          sanitize_kernel(p, k, device() && device()->is_opencl(), m_o.sanitize, home().runner);
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
    j["device"] = device() ? to_json(*device()) : nlohmann::json(nullptr);
    auto toolkit = home().compiler.toolkit();
    j["toolkit"] = toolkit ? *toolkit : "unavailable: " + toolkit.error().message;
    j["ncu"] = m_o.ncu.empty()
                   ? nlohmann::json(nullptr)
                   : nlohmann::json{{"path", m_o.ncu.string()}, {"version", m_o.ncu_version}};
    j["bench_options"] = to_json(m_o.bench);
    return j;
  }

  std::string source_text(const Variant& v) override {
    const Problem& p = problem_for(v);
    const KernelSpec* k = p.find_kernel(v.kernel);
    if (!k) return {};
    auto text = read_text_file(p.dir / k->source);
    return text ? *text : std::string{};
  }

 private:
  std::optional<Target> target() {
    if (!device()) return std::nullopt;
    auto spec = find_gpu_spec(device()->name);
    // The roofs every command uses (roofs.hpp): stored ceilings, else measured now (a device
    // without a spec entry, a CPU under OpenCL, has no other roofs, and without roofs there is
    // no target and no stop rule), else the spec table, which compute_target reads itself.
    DeviceRoofs roofs = resolve_roofs(m_o.cache_root, *device(), worker_ceilings(home().worker));
    const std::optional<StoredCeilings>& stored = roofs.ceilings;
    auto t = compute_target(m_p, default_precision(m_p), spec, device()->name,
                            stored ? &stored->result : nullptr, stored ? stored->measured_at : "");
    if (!t) return std::nullopt;
    return *t;
  }

  // The problem, or a copy whose kernel reads the variant's own source file (headers still
  // resolve in the problem's directory).
  // The problem with the variant's source in place of its kernel's (a copy: measure_all
  // measures several at once).
  Problem problem_for(const Variant& v) const {
    Problem p = m_p;
    if (!v.source.empty())
      for (auto& k : p.kernels)
        if (k.name == v.kernel) k.source = std::filesystem::absolute(v.source);
    return p;
  }

  // Where comparisons, profiles and checks run: the first worker not lost (each of them on
  // one device).
  const CheckContext& home() const {
    auto live = m_dispatch.live_workers();
    return m_ctxs[live.empty() ? 0 : live.front()];
  }

  const DeviceInfo* device() {
    if (!m_device) {
      auto d = home().worker.device_info();
      if (!d) return nullptr;
      m_device = *d;
    }
    return &*m_device;
  }
  std::string arch() { return m_o.arch.value_or(device() ? device()->arch() : "sm_90"); }

  static Measured measured(const BenchVariant& bv, const BenchReport& b) {
    Measured m{bv.status,    bv.summary.median, bv.summary.rel_noise,
               bv.summary.n, bv.error,          clocks_text(b.clocks_after)};
    for (const auto& f : bv.flags) m.flags.push_back(flag_text(f));
    return m;
  }

  BenchRequest request(std::vector<BenchVariantSpec> variants, bool compare) {
    return bench_request(std::move(variants), compare, m_o.bench, m_o.compare_threshold, m_o.arch,
                         m_o.cache_root);
  }

  const Problem& m_p;
  const MethodCatalog& m_catalog;
  GpuLabOptions m_o;
  std::vector<CheckContext> m_ctxs;
  Dispatcher m_dispatch;
  std::set<std::string> m_logged_losses;
  std::optional<DeviceInfo> m_device;
};

}  // namespace

std::unique_ptr<Lab> make_gpu_lab(const Problem& problem, const MethodCatalog& catalog,
                                  GpuLabOptions options, CheckContext ctx) {
  return make_gpu_lab(problem, catalog, std::move(options), std::vector<CheckContext>{ctx});
}

std::unique_ptr<Lab> make_gpu_lab(const Problem& problem, const MethodCatalog& catalog,
                                  GpuLabOptions options, std::vector<CheckContext> workers) {
  return std::make_unique<GpuLab>(problem, catalog, std::move(options), std::move(workers));
}

}  // namespace kopt
