#include "kopt/evaluate/checker.hpp"

#include <fmt/format.h>

#include "check_precision.hpp"
#include "check_run.hpp"
#include "kopt/evaluate/fits.hpp"
#include "kopt/evaluate/sanitize.hpp"

namespace kopt::evaluate {

std::string_view kernel_status_name(KernelStatus s) {
  return name_of(s);
}

int CheckReport::exit_code() const {
  if (kernels.empty())
    return device ? 0 : 3;  // a fresh import: its reference ran, or nothing could
  bool any_failed = false, any_ran = false, unverifiable = false;
  for (const auto& k : kernels) {
    auto sanitized = sanitizer_verdict(k.sanitizer);
    any_failed = any_failed ||
                 (k.status != KernelStatus::passed && k.status != KernelStatus::not_run) ||
                 sanitized == SanitizerStatus::findings;
    any_ran = any_ran || k.status != KernelStatus::not_run;
    unverifiable = unverifiable || sanitized == SanitizerStatus::unverifiable;
  }
  if (any_failed) return 1;
  return any_ran && !unverifiable ? 0 : 3;
}

namespace check_detail {

Expected<CheckReport> CheckRun::run() {
  m_report.problem = m_p.name;
  m_report.problem_dir = m_p.dir.string();
  m_report.reference_kind = reference_kind_name(m_p.reference.kind);
  if (auto e = select_kernels(); !e) return Unexpected(e.error());
  auto device = m_ctx.worker.device_info();
  if (device) {
    m_report.device = *device;
    m_limits = device->limits;
    if (auto fits = check_fits_device(m_p, *device); !fits) return Unexpected(fits.error());
  } else {
    if (device.error().kind != ErrorKind::environment) return Unexpected(device.error());
    m_report.device_error = device.error().message;
  }
  m_report.arch = m_o.arch ? *m_o.arch : device ? device->arch() : "sm_90";
  if (auto e = resolve_all(); !e) return Unexpected(e.error());
  auto toolkit = m_ctx.compiler.toolkit();
  if (!toolkit) return Unexpected(toolkit.error());
  m_report.toolkit = *toolkit;
  BuildCache cache(m_ctx.compiler, m_o.cache_root / "builds");
  std::vector<CompileRequest> requests;
  for (const auto& kc : m_report.kernels)
    requests.push_back(compile_request(m_p, *m_p.find_kernel(kc.kernel), kc.point, m_report.arch));
  auto builds = cache.build_all(requests, m_o.jobs);
  for (std::size_t i = 0; i < m_report.kernels.size(); ++i) {
    KernelCheck& kc = m_report.kernels[i];
    auto& b = builds[i];
    if (!b) return Unexpected(b.error());
    kc.build = *b;
    kc.resources = b->resources;
    if (!b->ok) {
      kc.status = KernelStatus::compile_failed;
      kc.error = "does not compile";
    }
    m_o.log("built " + kc.kernel + " [" + point_to_string(kc.point) + "] for " + m_report.arch +
            (b->from_cache ? " (cached)" : "") + (b->ok ? "" : ": COMPILE ERROR"));
  }
  for (auto& kc : m_report.kernels)
    if (kc.build.ok) {
      read_machine_precision(m_p, m_ctx.runner, kc);
      if (kc.status == KernelStatus::lower_precision)
        m_o.log(kc.kernel + ": LOWER PRECISION (" + kc.error + ")");
    }
  auto ref = build_reference(cache);
  if (!ref) return Unexpected(ref.error());
  if (!device) return m_report;
  m_report.reference_cached = true;
  for (std::int64_t i = 0; i < m_o.seeds; ++i) {
    bool secret = m_o.secret_seed && m_o.seeds >= 2 && i == m_o.seeds - 1;
    if (secret)  // the wide seed before the secret one; else after the others
      if (auto w = prepare_wide_seed(); !w) return Unexpected(w.error());
    std::uint64_t seed =
        secret ? draw_secret_seed() : m_o.first_seed + static_cast<std::uint64_t>(i);
    if (secret) m_report.secret_seed = seed;
    auto s = prepare_seed(seed, secret);
    if (!s) return Unexpected(s.error());
    m_report.seeds.push_back(s->seed);
    m_inputs.push_back(std::move(*s));
  }
  if (!m_report.secret_seed)  // tried before the secret seed when there was one
    if (auto w = prepare_wide_seed(); !w) return Unexpected(w.error());
  if (m_o.reference_only && !m_inputs.empty()) {
    for (const auto& t : m_p.tensors)
      if (t.role != Role::input) {
        m_report.reference_files[t.name] = m_inputs.front().reference.at(t.name);
        m_report.reference_tolerances[t.name] = tolerance_for(t);
      }
  }
  if (!m_inputs.empty()) make_fp64_reference(m_inputs.front());  // never the secret seed
  if (auto k = keep_secret(); !k) return Unexpected(k.error());
  for (auto& kc : m_report.kernels)
    if (kc.status != KernelStatus::compile_failed && kc.status != KernelStatus::lower_precision)
      if (check_kernel(kc); m_environment) return Unexpected(*m_environment);
  m_report.worker_starts = m_ctx.worker.starts();
  return m_report;
}

Expected<void> CheckRun::select_kernels() {
  if (m_o.reference_only) return {};
  if (!m_o.points.empty()) return select_points();
  auto chosen = kopt::select_kernels(m_p, m_o.kernels);
  if (!chosen) return Unexpected(chosen.error());
  if (auto used = check_assignments_used(m_p, *chosen, m_o.sets, "--set"); !used) return used;
  for (const KernelSpec* k : *chosen) add_kernel(*k, m_o.sets);
  return {};
}

Expected<void> CheckRun::select_points() {
  for (const auto& p : m_o.points) {
    const KernelSpec* k = m_p.find_kernel(p.kernel);
    if (!k)
      return Unexpected(bad_input("no kernel named '" + p.kernel + "'", m_p.spec_path.string()));
    if (auto used = check_assignments_used(m_p, {k}, p.sets, "--set"); !used) return used;
    add_kernel(*k, p.sets);
  }
  return {};
}

void CheckRun::add_kernel(const KernelSpec& k, const std::map<std::string, std::int64_t>& sets) {
  KernelCheck kc;
  kc.kernel = k.name;
  kc.source = (m_p.dir / k.source).string();
  m_report.kernels.push_back(kc);
  m_sets.push_back(sets);
}

Expected<void> CheckRun::resolve_all() {
  for (std::size_t i = 0; i < m_report.kernels.size(); ++i) {
    KernelCheck& kc = m_report.kernels[i];
    const KernelSpec& k = *m_p.find_kernel(kc.kernel);
    auto point = resolve_point(m_p, k, m_sets[i]);
    if (!point) return Unexpected(point.error());
    kc.point = *point;
    auto launch = resolve_launch(m_p, k, kc.point, m_limits);
    if (!launch) return Unexpected(launch.error());
    kc.launch = *launch;
  }
  if (m_p.reference.kind == ReferenceKind::cuda) {
    auto launch = resolve_launch(m_p, m_p.reference.kernel, {}, m_limits);
    if (!launch) return Unexpected(launch.error());
    m_ref_launch = *launch;
  } else {
    auto args = resolve_args(m_p, m_p.reference.kernel, {});
    if (!args) return Unexpected(args.error());
    m_ref_launch.args = *args;
    for (const auto& d : m_p.dims) m_ref_launch.scalars[d.name] = d.value;
  }
  return {};
}

}  // namespace check_detail

Expected<CheckReport> run_check(const Problem& problem, const CheckOptions& options,
                                CheckContext ctx) {
  try {
    check_detail::CheckRun run(problem, options, ctx);
    return run.run();
  } catch (const std::exception& e) {  // e.g. no temp dir; never a candidate's doing
    return Unexpected(internal_error(std::string("check: ") + e.what()));
  }
}

}  // namespace kopt::evaluate
