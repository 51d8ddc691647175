#include "kopt/evaluate/evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <mutex>
#include <set>

#include "kopt/backend/build_cache.hpp"
#include "kopt/backend/build_queue.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/launch.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt::evaluate {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

std::optional<std::string> lost_after(const Expected<BenchReport>& b, WorkerClient& worker) {
  if (b && std::any_of(b->variants.begin(), b->variants.end(),
                       [](const BenchVariant& v) { return v.status == VariantStatus::ok; }))
    return std::nullopt;
  return worker_lost(worker);
}

Evaluator::Evaluator(const Problem& problem, std::vector<CheckContext> workers,
                     EvaluatorOptions options)
    : m_p(problem), m_ctxs(std::move(workers)), m_o(std::move(options)), m_dispatch(m_ctxs.size()) {
  if (!m_o.log) m_o.log = [](const std::string&) {};
  if (!m_ctxs.empty() && m_ctxs.front().compiler.concurrent())
    m_queue = std::make_unique<BuildQueue>(m_ctxs.front().compiler, m_o.cache_root / "builds",
                                           std::max(1u, m_o.jobs));
}

Evaluator::~Evaluator() = default;

std::size_t Evaluator::home_index() const {
  auto live = m_dispatch.live_workers();
  return live.empty() ? 0 : live.front();
}

const CheckContext& Evaluator::home() const {
  return m_ctxs.at(home_index());
}

const DeviceInfo* Evaluator::home_device() {
  if (!m_home_device) {
    auto d = home().worker.device_info();
    if (!d) return nullptr;
    m_home_device = *d;
  }
  return &*m_home_device;
}

std::string Evaluator::arch() {
  if (m_o.arch) return *m_o.arch;
  const DeviceInfo* d = home_device();
  return d ? d->arch() : "sm_90";
}

Expected<std::vector<DeviceInfo>> Evaluator::devices() {
  if (!m_devices) {
    auto d = worker_devices(m_ctxs, m_o.allow_mixed, m_device_notes);
    if (!d) return Unexpected(d.error());
    m_devices = *d;
  }
  return *m_devices;
}

std::vector<std::string> Evaluator::notes() const {
  std::vector<std::string> out = m_device_notes;
  for (auto& n : m_dispatch.notes()) out.push_back(std::move(n));
  return out;
}

std::string Evaluator::worker_label(std::size_t w) {
  if (m_ctxs.size() <= 1) return "";
  return kopt::evaluate::worker_label(w, m_ctxs.at(w).worker);
}

DeviceRoofs Evaluator::roofs() {
  const DeviceInfo* d = home_device();
  if (!d) return DeviceRoofs{};
  return resolve_roofs(m_o.cache_root, *d, worker_ceilings(home().worker), m_o.log);
}

Problem Evaluator::problem_for(const Candidate& c) const {
  Problem p = m_p;
  if (!c.source.empty())
    for (auto& k : p.kernels)
      if (k.name == c.kernel) k.source = std::filesystem::absolute(c.source);
  return p;
}

JobProblem job_problem(const Problem& p, const std::vector<Candidate>& cs) {
  JobProblem out{p, cs};
  std::map<std::string, std::set<std::filesystem::path>> sources;  // "" for the problem's
  for (const auto& c : cs) sources[c.kernel].insert(c.source);
  for (auto& c : out.candidates) {
    if (c.source.empty()) continue;
    const KernelSpec* k = p.find_kernel(c.kernel);
    if (!k) continue;  // the pipeline says "no such kernel"
    std::filesystem::path file = std::filesystem::absolute(c.source);
    if (sources[c.kernel].size() == 1) {  // one source: the kernel reads it
      for (auto& spec : out.problem.kernels)
        if (spec.name == c.kernel) spec.source = file;
      continue;
    }
    std::string name = c.kernel + " [" + c.source.string() + "]";
    if (!out.problem.find_kernel(name)) {
      KernelSpec copy = *k;
      copy.name = name;
      copy.source = file;
      copy.sources = {file};
      out.problem.kernels.push_back(std::move(copy));
    }
    c.kernel = name;
  }
  return out;
}

BenchRequest Evaluator::request(const std::vector<Candidate>& cs, const Rigour& r) const {
  BenchRequest req;
  for (const auto& c : cs) req.variants.push_back({c.kernel, c.sets});
  req.options = r.timing;
  if (r.cap_per_candidate)
    req.options.rule.max_time_s *= double(std::max<std::size_t>(cs.size(), 1));
  req.threshold = r.threshold;
  req.check_first = r.check;
  req.check_in_timing = r.check_in_timing;
  req.secret_samples = r.secret_samples;
  req.time_the_rest = true;  // a failed candidate costs no other its measurement
  req.jobs = std::max(1u, m_o.jobs);
  req.arch = m_o.arch;
  req.cache_root = m_o.cache_root;
  req.references_root = references();
  req.log = m_o.log;
  return req;
}

Expected<BenchReport> Evaluator::run_on(std::size_t worker, const std::vector<Candidate>& cs,
                                        const Rigour& rigour, bool compare, bool baselines) {
  JobProblem job = job_problem(m_p, cs);
  BenchRequest r = request(job.candidates, rigour);
  r.compare = compare;
  r.time_the_rest = !compare;  // a comparison needs both sides, or neither
  r.vs_torch = baselines;
  return run_bench(job.problem, r, m_ctxs.at(worker));
}

Expected<BenchReport> Evaluator::side_by_side(const std::vector<Candidate>& cs,
                                              const Rigour& rigour,
                                              std::optional<std::size_t> worker) {
  return run_on(worker.value_or(home_index()), cs, rigour);
}

Expected<BenchReport> Evaluator::compare(const Candidate& a, const Candidate& b,
                                         const Rigour& rigour) {
  return run_on(home_index(), {a, b}, rigour, /*compare=*/true);
}

Expected<BenchReport> Evaluator::with_baselines(const std::vector<Candidate>& cs,
                                                const Rigour& rigour) {
  return run_on(home_index(), cs, rigour, /*compare=*/false, /*baselines=*/true);
}

std::vector<Expected<BenchReport>> Evaluator::spread(
    const std::vector<std::vector<Candidate>>& groups, const Rigour& rigour,
    const GroupDone& done) {
  std::vector<std::optional<Expected<BenchReport>>> out(groups.size());
  std::mutex mutex;
  auto finish = [&](std::size_t g, std::size_t w, Expected<BenchReport> b) {
    std::lock_guard lock(mutex);
    out[g] = std::move(b);
    if (done) done(g, w, *out[g]);
  };
  m_dispatch.run(
      groups.size(),
      [&](std::size_t g, std::size_t w) {
        auto b = run_on(w, groups[g], rigour);
        if (auto lost = lost_after(b, m_ctxs[w].worker)) return DispatchOutcome{true, *lost};
        finish(g, w, std::move(b));
        return DispatchOutcome{};
      },
      [&](std::size_t g, const std::string& why) {
        finish(g, home_index(), Unexpected(environment_error(why)));
      });
  std::vector<Expected<BenchReport>> results;
  for (auto& r : out) results.push_back(std::move(*r));
  return results;
}

Expected<BenchReport> Evaluator::one_per_worker(const std::vector<Candidate>& cs,
                                                const Rigour& rigour) {
  auto t0 = Clock::now();
  std::vector<std::vector<Candidate>> groups;
  for (const auto& c : cs) groups.push_back({c});
  std::vector<std::size_t> ran_on(cs.size(), 0);
  auto parts =
      spread(groups, rigour, [&](std::size_t g, std::size_t w, const auto&) { ran_on[g] = w; });
  // The report of the first part that ran holds the device, clocks and roofs.
  std::optional<BenchReport> out;
  for (const auto& p : parts)
    if (p && !out) out = *p;
  if (!out)
    return Unexpected(parts.empty() ? internal_error("no candidate") : parts.front().error());
  out->variants.clear();
  out->build_s = out->check_s = out->measure_s = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i]) {
      BenchVariant v;
      v.kernel = cs[i].kernel;
      v.point = ParamPoint(cs[i].sets.begin(), cs[i].sets.end());
      v.status = VariantStatus::error;
      v.error = parts[i].error().message;
      out->variants.push_back(std::move(v));
      continue;
    }
    for (BenchVariant v : parts[i]->variants) {
      v.device = worker_label(ran_on[i]);
      out->variants.push_back(std::move(v));
    }
    out->build_s = std::max(out->build_s, parts[i]->build_s);
    out->check_s = std::max(out->check_s, parts[i]->check_s);
    out->measure_s = std::max(out->measure_s, parts[i]->measure_s);
  }
  out->wall_s = seconds_since(t0);
  return std::move(*out);
}

std::vector<Expected<BenchReport>> Evaluator::on_one_device(
    const std::vector<std::vector<Candidate>>& groups, const Rigour& rigour, std::size_t& worker) {
  for (;;) {
    auto live = m_dispatch.live_workers();
    if (live.empty()) {
      worker = 0;
      return std::vector<Expected<BenchReport>>(
          groups.size(), Unexpected(environment_error("no live worker left to measure it")));
    }
    worker = live.front();
    std::vector<Expected<BenchReport>> out;
    bool lost = false;
    for (const auto& g : groups) {
      auto b = run_on(worker, g, rigour);
      if (auto why = lost_after(b, m_ctxs[worker].worker)) {
        m_dispatch.retire(worker, *why);
        lost = true;
        break;
      }
      out.push_back(std::move(b));
    }
    if (!lost) return out;
  }
}

CompileRequest Evaluator::compile_request_for(const Candidate& c) {
  Problem p = problem_for(c);
  const KernelSpec* k = p.find_kernel(c.kernel);
  ParamPoint point(c.sets.begin(), c.sets.end());
  if (k)
    if (auto resolved = resolve_point(p, *k, c.sets)) point = *resolved;
  return k ? compile_request(p, *k, point, arch()) : CompileRequest{};
}

void Evaluator::build_ahead(const std::vector<Candidate>& cs) {
  if (!m_queue) return;  // builds that happen in the worker, one request at a time: in the job
  std::vector<CompileRequest> rs;
  for (const auto& c : cs) rs.push_back(compile_request_for(c));
  m_queue->add(rs);
}

double Evaluator::wait_for_builds(const std::vector<Candidate>& cs) {
  if (!m_queue) return 0;
  std::vector<CompileRequest> rs;
  for (const auto& c : cs) rs.push_back(compile_request_for(c));
  return m_queue->wait(rs);
}

std::pair<double, double> Evaluator::build_while_measuring_roofs(const std::vector<Candidate>& cs) {
  if (!home().compiler.concurrent()) return {0, 0};  // its builds would need the worker too
  auto t0 = Clock::now();
  const DeviceInfo* device = home_device();
  auto roofs = std::async(std::launch::async, [&] {
    if (device)
      (void)resolve_roofs(m_o.cache_root, *device, worker_ceilings(home().worker), m_o.log);
  });
  std::vector<CompileRequest> rs;
  for (const auto& c : cs) rs.push_back(compile_request_for(c));
  BuildCache cache(home().compiler, m_o.cache_root / "builds");
  (void)cache.build_all(rs, std::max(1u, m_o.jobs));
  auto built = Clock::now();
  roofs.get();
  return {std::chrono::duration<double>(built - t0).count(), seconds_since(built)};
}

Expected<CheckReport> Evaluator::check(const Candidate& c, CheckOptions options, bool other_shape) {
  Problem p = problem_for(c);
  options.kernels = {c.kernel};
  options.sets = c.sets;
  if (!options.arch) options.arch = m_o.arch;
  options.cache_root = references();
  auto checked = run_check(p, options, home());
  if (!checked || !other_shape || checked->kernels.empty()) return checked;
  if (auto shaped = check_other_shape(p, options, home(), *checked); !shaped)
    return Unexpected(shaped.error());
  return checked;
}

Expected<std::vector<KernelProfile>> Evaluator::profile(
    const std::vector<Candidate>& cs, const std::vector<std::filesystem::path>& dirs,
    ProfileRequest request, const std::filesystem::path& session_dir) {
  request.arch = m_o.arch;
  request.cache_root = m_o.cache_root;
  std::vector<Problem> problems;
  problems.reserve(cs.size());  // items point into it
  std::vector<ProfileItem> items;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    problems.push_back(problem_for(cs[i]));
    items.push_back({&problems.back(), cs[i].kernel, cs[i].sets, dirs.at(i)});
  }
  return run_profile_items(items, request, home(), session_dir);
}

Expected<std::string> Evaluator::key(const Candidate& c, const Rigour& rigour) {
  Problem p = problem_for(c);
  const KernelSpec* k = p.find_kernel(c.kernel);
  if (!k) return Unexpected(bad_input("no kernel named '" + c.kernel + "'"));
  ParamPoint point(c.sets.begin(), c.sets.end());
  BuildCache cache(home().compiler, m_o.cache_root / "builds");
  auto build_key = cache.key(compile_request(p, *k, point, arch()));
  if (!build_key) return Unexpected(build_key.error());
  const DeviceInfo* device = home_device();
  Sha256 h;
  h.field("kopt-evaluation-v2").field(*build_key).field(device ? device->name : "no device");
  // The launch is kopt.toml's, not the build's: a grid, block, shared-memory size or argument
  // changed there is another measurement of the same build.
  auto launch = resolve_launch(p, *k, point, device ? device->limits : architectural_limits());
  if (!launch) {
    h.field("launch error").field(launch.error().message);  // measured, it fails with this
  } else {
    h.field(dim3_to_string(launch->grid))
        .field(dim3_to_string(launch->block))
        .field(std::to_string(launch->shared_mem));
    for (const auto& a : launch->args) h.field(to_json(a).dump());
  }
  for (const auto& d : m_p.dims) h.field(d.name).field(std::to_string(d.value));
  h.field(to_json(rigour.timing).dump());
  return h.hex().substr(0, 32);
}

}  // namespace kopt::evaluate
