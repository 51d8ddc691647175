#include "kopt/evaluate/profiler.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kopt/backend/python/triton_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/roofs.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/tools/ncu.hpp"
#include "kopt/worker/protocol.hpp"
#include "profile_session.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
using nlohmann::json;

int ProfileReport::exit_code() const {
  int code = 0;
  for (const auto& k : kernels) {
    if (k.status == ProfileStatus::no_counters) return 3;
    if (k.status != ProfileStatus::ok && k.status != ProfileStatus::timing_only) code = 1;
  }
  return code;
}

namespace {
using profile_detail::fail;
using profile_detail::Staged;

class ProfileRun {
 public:
  ProfileRun(const ProfileRequest& r, CheckContext c) : m_r(r), m_ctx(c) {}

  // kopt profile: the selected kernels of one problem, in one session under its folder.
  Expected<ProfileReport> run(const Problem& p) {
    ProfileReport report;
    report.problem = p.name;
    auto checked = check(p, m_r.kernels, m_r.sets);
    if (!checked) return Unexpected(checked.error());
    report.device = *m_device;
    std::vector<Staged> staged;
    for (const auto& kc : checked->kernels) {
      report.kernels.push_back(begin(p, kc, m_r.out_dir / kc.kernel));
      stage(p, kc, report.kernels, staged);
    }
    profile(staged, report.kernels, m_r.out_dir);
    return report;
  }

  // The loop's items: checked per problem (branches of other sources are other problems).
  Expected<std::vector<KernelProfile>> run_items(const std::vector<ProfileItem>& items,
                                                 const fs::path& session_dir) {
    std::vector<KernelProfile> out;
    std::vector<Staged> staged;
    for (const auto& item : items) {
      auto checked = check(*item.problem, {item.kernel}, item.sets);
      if (!checked) return Unexpected(checked.error());
      out.push_back(begin(*item.problem, checked->kernels.at(0), item.dir));
      stage(*item.problem, checked->kernels.at(0), out, staged);
    }
    profile(staged, out, session_dir);
    return out;
  }

 private:
  Expected<CheckReport> check(const Problem& p, const std::vector<std::string>& kernels,
                              const std::map<std::string, std::int64_t>& sets) {
    CheckOptions co;
    co.kernels = kernels;
    co.sets = sets;
    co.seeds = 1;
    co.arch = m_r.arch;
    co.cache_root = m_r.cache_root;
    co.log = m_r.log;
    auto checked = run_check(p, co, m_ctx);
    if (!checked) return Unexpected(checked.error());
    if (!checked->device) return Unexpected(environment_error(checked->device_error));
    if (!m_device) {
      m_device = *checked->device;
      // The roofs every command uses (roofs.hpp): stored ceilings, else measured now, else the
      // spec table, which choose_roofs falls back to by itself.
      m_ceilings =
          resolve_roofs(m_r.cache_root, *m_device, worker_ceilings(m_ctx.worker), m_r.log).ceilings;
    }
    return checked;
  }

  KernelProfile begin(const Problem& p, const KernelCheck& kc, const fs::path& dir) const {
    KernelProfile kp;
    kp.kernel = kc.kernel;
    kp.point = kc.point;
    kp.resources = kc.resources;
    kp.dir = dir;
    kp.provenance.problem = p.name;
    kp.provenance.variant = kc.kernel + (kc.point.empty() ? "" : " " + point_to_string(kc.point));
    kp.provenance.device = m_device->name;
    kp.provenance.ncu_version = m_r.ncu_version;
    return kp;
  }

  // The kernel's job for the session, or its KernelProfile finished here: it failed its check,
  // its folder cannot be made, or it has no counters to read (OpenCL; Triton code with no
  // @triton.jit function).
  void stage(const Problem& p, const KernelCheck& kc, std::vector<KernelProfile>& profiles,
             std::vector<Staged>& staged) {
    KernelProfile& kp = profiles.back();
    if (kc.status == KernelStatus::compile_failed || kc.status == KernelStatus::run_failed ||
        kc.status == KernelStatus::not_run)
      return fail(kp,
                  kc.status == KernelStatus::compile_failed ? ProfileStatus::compile_failed
                                                            : ProfileStatus::run_failed,
                  kc.error);
    if (kc.status == KernelStatus::mismatch && m_r.check_first)
      return fail(kp, ProfileStatus::wrong,
                  "the output is wrong (kopt check); not profiled (--no-check profiles it anyway)");
    std::error_code ec;
    fs::create_directories(kp.dir, ec);
    if (ec)
      return fail(kp, ProfileStatus::profile_failed,
                  "cannot create " + kp.dir.string() + ": " + ec.message());
    if (m_device->is_opencl())
      return profile_detail::degrade(
          p, kc, session(), kp, ProfileStatus::timing_only,
          "the OpenCL backend has no hardware-counter profiler (ncu profiles CUDA kernels only).");
    Staged s{profiles.size() - 1, &p, kc, kc.build.lowered_entry, {}};
    if (kc.build.module_kind == ModuleKind::triton) {
      // ncu follows the Python worker and picks out the @triton.jit kernels.
      auto names = triton_kernel_names(read_text_file(kc.build.cubin_path).value_or(""));
      if (names.empty())
        return profile_detail::degrade(p, kc, session(), kp, ProfileStatus::timing_only,
                                       "no @triton.jit function in " + kc.kernel +
                                           "'s source for ncu to pick out (it "
                                           "calls library code only): timed, not profiled.");
      s.filter = "regex:^(" + fmt::format("{}", fmt::join(names, "|")) + ")$";
    }
    // A solve() library launches kernels whose names kopt does not know (CUTLASS's, cuBLAS's):
    // no filter; in its range the worker runs nothing else, and its longest kernel is taken.
    if (kc.build.module_kind == ModuleKind::solve_library) s.filter.clear();
    auto inputs = seed_inputs(p);
    if (!inputs) return fail(kp, ProfileStatus::profile_failed, inputs.error().message);
    fs::path job_dir = m_tmp.path() / ("job" + std::to_string(staged.size()));
    fs::create_directories(job_dir, ec);
    RunJob job = kernel_job(p.name + "/" + kc.kernel + " " + point_to_string(kc.point), kc.build,
                            kc.launch, job_tensors(p, **inputs, job_dir));
    s.job_file = job_dir / "job.json";
    if (auto w = write_text_atomic(s.job_file, to_json(job).dump()); !w)
      return fail(kp, ProfileStatus::profile_failed, w.error().message);
    staged.push_back(std::move(s));
  }

  // One session for all (or one per kernel: one_session off); a single kernel's files stay in
  // its own folder.
  void profile(const std::vector<Staged>& staged, std::vector<KernelProfile>& profiles,
               const fs::path& session_dir) {
    if (staged.size() == 1 || !m_r.one_session) {
      for (const auto& s : staged)
        profile_detail::run_session({s}, profiles, session(), profiles[s.profile].dir);
      return;
    }
    profile_detail::run_session(staged, profiles, session(), session_dir);
  }

  // Seed 1's inputs, written once per problem for every job of it.
  Expected<const SeedInputs*> seed_inputs(const Problem& p) {
    if (auto it = m_inputs.find(&p); it != m_inputs.end()) return &it->second;
    auto inputs = write_seed_inputs(
        p, 1, m_tmp.path() / ("inputs" + std::to_string(m_inputs.size())), InputFiles::now);
    if (!inputs) return Unexpected(inputs.error());
    return &m_inputs.emplace(&p, std::move(*inputs)).first->second;
  }

  profile_detail::SessionContext session() const { return {m_r, m_ctx, *m_device, m_ceilings}; }

  const ProfileRequest& m_r;
  CheckContext m_ctx;
  std::optional<DeviceInfo> m_device;
  std::optional<StoredCeilings> m_ceilings;
  TempDir m_tmp{"kopt-profile"};
  std::map<const Problem*, SeedInputs> m_inputs;
};

}  // namespace

Expected<ProfileReport> run_profile(const Problem& problem, const ProfileRequest& request,
                                    CheckContext ctx) {
  try {
    return ProfileRun(request, ctx).run(problem);
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("profile: ") + e.what()));
  }
}

Expected<std::vector<KernelProfile>> run_profile_items(const std::vector<ProfileItem>& items,
                                                       const ProfileRequest& request,
                                                       CheckContext ctx,
                                                       const fs::path& session_dir) {
  try {
    return ProfileRun(request, ctx).run_items(items, session_dir);
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("profile: ") + e.what()));
  }
}

json to_json(const ProfileReport& r) {
  json kernels = json::array();
  for (const auto& k : r.kernels) {
    json j{{"kernel", k.kernel},
           {"params", k.point},
           {"status", k.status},
           {"error", k.error},
           {"dir", k.dir.string()},
           {"ncu_wall_s", k.ncu_wall_s},
           {"ncu_session_kernels", k.session_kernels},
           {"ncu_command", k.provenance.command},
           {"collection", k.provenance.collection},
           {"report_file", k.provenance.report_file},
           {"csv_file", k.provenance.csv_file}};
    j["analysis"] = k.explanation ? to_json(*k.explanation) : json(nullptr);
    kernels.push_back(std::move(j));
  }
  return {{"schema_version", 1},
          {"command", "profile"},
          {"problem", r.problem},
          {"device", r.device.name},
          {"kernels", kernels}};
}

}  // namespace kopt::evaluate
