#include "kopt/engine/profiler.hpp"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kopt/backend/python/triton_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/engine/roofs.hpp"
#include "kopt/engine/variant_jobs.hpp"
#include "kopt/tools/ncu.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

int ProfileReport::exit_code() const {
  int code = 0;
  for (const auto& k : kernels) {
    if (k.status == "no_counters") return 3;
    if (k.status != "ok" && k.status != "timing_only") code = 1;
  }
  return code;
}

namespace {

std::string join_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    bool quote = a.find_first_of(" ,;*()") != std::string::npos;
    s += (s.empty() ? "" : " ") + (quote ? "'" + a + "'" : a);
  }
  return s;
}

class ProfileRun {
 public:
  ProfileRun(const Problem& p, const ProfileRequest& r, CheckContext c) : m_p(p), m_r(r), m_ctx(c) {}

  Expected<ProfileReport> run() {
    ProfileReport report;
    report.problem = m_p.name;
    CheckOptions co;
    co.kernels = m_r.kernels;
    co.sets = m_r.sets;
    co.seeds = 1;
    co.arch = m_r.arch;
    co.cache_root = m_r.cache_root;
    co.log = m_r.log;
    auto checked = run_check(m_p, co, m_ctx);
    if (!checked) return Unexpected(checked.error());
    if (!checked->device) return Unexpected(environment_error(checked->device_error));
    report.device = *checked->device;
    // The roofs every command uses (roofs.hpp): stored ceilings, else measured now, else the
    // spec table, which choose_roofs falls back to by itself.
    DeviceRoofs roofs = resolve_roofs(m_r.cache_root, report.device, worker_ceilings(m_ctx.worker), m_r.log);
    m_ceilings = roofs.ceilings;
    for (const auto& kc : checked->kernels) report.kernels.push_back(profile_kernel(kc, report.device));
    return report;
  }

 private:
  KernelProfile profile_kernel(const KernelCheck& kc, const DeviceInfo& device) {
    KernelProfile kp;
    kp.kernel = kc.kernel;
    kp.point = kc.point;
    kp.resources = kc.resources;
    kp.dir = m_r.out_dir / kc.kernel;
    kp.provenance.problem = m_p.name;
    kp.provenance.variant = kc.kernel + (kc.point.empty() ? "" : " " + point_to_string(kc.point));
    kp.provenance.device = device.name;
    kp.provenance.ncu_version = m_r.ncu_version;
    if (kc.status == KernelStatus::compile_failed || kc.status == KernelStatus::run_failed ||
        kc.status == KernelStatus::not_run) {
      kp.status = kc.status == KernelStatus::compile_failed ? "compile_failed" : "run_failed";
      kp.error = kc.error;
      return kp;
    }
    if (kc.status == KernelStatus::mismatch && m_r.check_first) {
      kp.status = "wrong";
      kp.error = "the output is wrong (kopt check); not profiled (--no-check profiles it anyway)";
      return kp;
    }
    std::error_code ec;
    fs::create_directories(kp.dir, ec);
    if (ec) {
      kp.status = "profile_failed";
      kp.error = "cannot create " + kp.dir.string() + ": " + ec.message();
      return kp;
    }
    if (device.is_opencl())
      degrade(kc, device, kp, "timing_only",
              "the OpenCL backend has no hardware-counter profiler (ncu profiles CUDA kernels only).");
    else profile_with_ncu(kc, device, kp);
    return kp;
  }

  void profile_with_ncu(const KernelCheck& kc, const DeviceInfo& device, KernelProfile& kp) {
    TempDir tmp("kopt-profile");
    auto inputs = write_seed_inputs(m_p, 1, tmp.path());
    if (!inputs) return fail(kp, "profile_failed", inputs.error().message);
    RunJob job = kernel_job(m_p.name + "/" + kc.kernel + " " + point_to_string(kc.point), kc.build, kc.launch,
                            job_tensors(m_p, *inputs, tmp.path()));
    fs::path job_file = tmp.path() / "job.json";
    if (auto w = write_text_atomic(job_file, to_json(job).dump()); !w) return fail(kp, "profile_failed", w.error().message);
    NcuRequest nr;
    nr.ncu = m_r.ncu;
    nr.questions = m_r.questions.empty() ? default_ncu_questions() : m_r.questions;
    nr.set = m_r.ncu_set;
    nr.clock_control = m_r.clock_control;
    nr.kernel_name = kc.build.lowered_entry;
    if (kc.build.module_kind == ModuleKind::triton) {
      // The Python worker runs it; ncu follows it there and picks out the @triton.jit kernels.
      auto names = triton_kernel_names(read_text_file(kc.build.cubin_path).value_or(""));
      if (names.empty())
        return degrade(kc, device, kp, "timing_only",
                       "no @triton.jit function in " + kc.kernel + "'s source for ncu to pick out (it calls "
                       "library code only): timed, not profiled.");
      nr.kernel_name = "regex:^(" + fmt::format("{}", fmt::join(names, "|")) + ")$";
    }
    // A solve() library launches kernels whose names kopt does not know (CUTLASS's, cuBLAS's):
    // no filter; the one-shot worker runs nothing else, and the report's longest kernel is
    // taken (select_kernel).
    if (kc.build.module_kind == ModuleKind::solve_library) nr.kernel_name.clear();
    nr.launch_skip = m_r.launch_skip;
    nr.launch_count = m_r.launch_count;
    nr.report = kp.dir / "profile";
    // The one-shot worker runs a Python job (a Triton kernel) in its Python child by the job's kind.
    nr.program = {m_r.kopt_executable.string(), "worker", "--device", std::to_string(m_r.device), "--once",
                  job_file.string(), "--repeat", std::to_string(m_r.launch_skip + m_r.launch_count)};
    auto argv = ncu_profile_argv(nr);
    kp.provenance.command = join_command(argv);
    kp.provenance.collection = nr.set ? "--set " + *nr.set : "questions " + [&] {
      std::string q;
      for (const auto& x : nr.questions) q += (q.empty() ? "" : ",") + x;
      return q;
    }();
    m_r.log("profiling " + kp.provenance.variant + " under ncu");
    auto t0 = std::chrono::steady_clock::now();
    CommandResult r = m_ctx.runner.run(argv, std::chrono::milliseconds(static_cast<long>(m_r.timeout_s * 1000)));
    kp.ncu_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (void)write_text_atomic(kp.dir / "ncu.log", r.out + r.err);
    NcuOutcome outcome = classify_ncu_run(r);
    if (outcome.failure == NcuFailure::no_permission) return degrade(kc, device, kp, "no_counters", outcome.message);
    if (outcome.failure != NcuFailure::none) return fail(kp, "profile_failed", outcome.message);
    fs::path rep = kp.dir / "profile.ncu-rep";
    CommandResult csv = m_ctx.runner.run(ncu_import_argv(m_r.ncu, rep), std::chrono::milliseconds(120000));
    if (!csv.ok()) return fail(kp, "profile_failed", "ncu --import failed: " + csv.err.substr(0, 400));
    kp.provenance.report_file = rep.string();
    kp.provenance.csv_file = (kp.dir / "profile.csv").string();
    (void)write_text_atomic(kp.dir / "profile.csv", csv.out);
    auto parsed = parse_ncu_csv(csv.out, kp.provenance.csv_file);
    if (!parsed) return fail(kp, "profile_failed", parsed.error().message);
    auto target = select_kernel(*parsed, "");
    if (!target) return fail(kp, "profile_failed", target.error().message);
    ExplainInputs in = explain_inputs(device);
    in.profile = *target;
    kp.explanation = explain(in);
    write_markdown(kp);
  }

  ExplainInputs explain_inputs(const DeviceInfo& device) {
    ExplainInputs in;
    in.device_name = device.name;
    if (m_ceilings) {
      in.ceilings = &m_ceilings->result;
      in.ceilings_measured_at = m_ceilings->measured_at;
    }
    Cost cost = m_p.cost_at_dims();
    in.cost_flops = cost.flops;
    in.cost_bytes = cost.bytes;
    in.has_half_data = m_p.has_half_data();
    return in;
  }

  // No counters (no permission, or a backend without a counter profiler): time from the
  // check's run and the static facts, and say so.
  void degrade(const KernelCheck& kc, const DeviceInfo& device, KernelProfile& kp, const std::string& status,
               const std::string& why) {
    kp.status = status;
    kp.error = why;
    ExplainInputs in = explain_inputs(device);
    in.profile.kernel = kc.build.lowered_entry;
    in.profile.launches = 1;
    for (const auto& s : kc.seeds)
      if (s.kernel_ms > 0) in.time_s = s.kernel_ms * 1e-3;
    in.profile.metrics["launch__registers_per_thread"] = kc.resources.registers;
    Explanation e = explain(in);
    e.time_source = "one event-timed launch of kopt check (no counters)";
    e.bottleneck.rule = "no counters: " + why + " The analysis is limited to timing, the cost-formula roofline "
                        "and the build's resources.";
    kp.explanation = std::move(e);
    write_markdown(kp);
  }

  void write_markdown(KernelProfile& kp) {
    (void)write_text_atomic(kp.dir / "summary.md", summary_markdown(*kp.explanation, kp.provenance));
    (void)write_text_atomic(kp.dir / "details.md", details_markdown(*kp.explanation, kp.provenance));
    (void)write_text_atomic(kp.dir / "analysis.json", to_json(*kp.explanation).dump(2));
  }

  void fail(KernelProfile& kp, const std::string& status, const std::string& error) {
    kp.status = status;
    kp.error = error;
  }

  const Problem& m_p;
  const ProfileRequest& m_r;
  CheckContext m_ctx;
  std::optional<StoredCeilings> m_ceilings;
};

}  // namespace

Expected<ProfileReport> run_profile(const Problem& problem, const ProfileRequest& request, CheckContext ctx) {
  try {
    ProfileRun run(problem, request, ctx);
    return run.run();
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("profile: ") + e.what()));
  }
}

json to_json(const ProfileReport& r) {
  json kernels = json::array();
  for (const auto& k : r.kernels) {
    json j{{"kernel", k.kernel}, {"params", k.point}, {"status", k.status}, {"error", k.error},
           {"dir", k.dir.string()}, {"ncu_wall_s", k.ncu_wall_s}, {"ncu_command", k.provenance.command},
           {"collection", k.provenance.collection}, {"report_file", k.provenance.report_file},
           {"csv_file", k.provenance.csv_file}};
    j["analysis"] = k.explanation ? to_json(*k.explanation) : json(nullptr);
    kernels.push_back(std::move(j));
  }
  return {{"schema_version", 1}, {"command", "profile"}, {"problem", r.problem}, {"device", r.device.name},
          {"kernels", kernels}};
}

}  // namespace kopt
