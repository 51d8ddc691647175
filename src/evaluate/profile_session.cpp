#include "profile_session.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>

#include "kopt/core/fs.hpp"
#include "kopt/tools/ncu.hpp"

namespace kopt::evaluate::profile_detail {
namespace fs = std::filesystem;

namespace {

std::string join_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    bool quote = a.find_first_of(" ,;*()[]+|^$") != std::string::npos;
    s += (s.empty() ? "" : " ") + (quote ? "'" + a + "'" : a);
  }
  return s;
}

}  // namespace

void fail(KernelProfile& kp, ProfileStatus status, const std::string& error) {
  kp.status = status;
  kp.error = error;
}

ExplainInputs explain_inputs(const Problem& p, const DeviceInfo& device,
                             const std::optional<StoredCeilings>& c) {
  ExplainInputs in;
  in.device_name = device.name;
  if (c) {
    in.ceilings = &c->result.ceilings;
    in.ceilings_measured_at = c->measured_at;
  }
  Cost cost = p.cost_at_dims();
  in.cost_flops = cost.flops;
  in.cost_bytes = cost.bytes;
  in.has_half_data = p.has_half_data();
  return in;
}

void write_profile_files(const KernelProfile& kp) {
  (void)write_text_atomic(kp.dir / "summary.md", summary_markdown(*kp.explanation, kp.provenance));
  (void)write_text_atomic(kp.dir / "details.md", details_markdown(*kp.explanation, kp.provenance));
  (void)write_text_atomic(kp.dir / "analysis.json", to_json(*kp.explanation).dump(2));
}

void run_session(const std::vector<Staged>& batch, std::vector<KernelProfile>& profiles,
                 const SessionContext& sc, const fs::path& session_dir) {
  if (batch.empty()) return;
  const ProfileRequest& r = sc.request;
  NcuRequest nr;
  nr.ncu = r.ncu;
  nr.questions = r.questions.empty() ? default_ncu_questions() : r.questions;
  nr.set = r.ncu_set;
  nr.clock_control = r.clock_control;
  std::vector<std::string> filters;
  for (const auto& b : batch) filters.push_back(b.filter);
  nr.kernel_name = ncu_kernel_filter_union(filters);
  nr.report = session_dir / "profile";
  // The one-shot worker runs each job's warm-up launches, then its profiled ones inside its
  // NVTX range; a Python job (a Triton kernel) in its Python child, by the job's kind.
  nr.program = {r.kopt_executable.string(), "worker", "--device", std::to_string(r.device)};
  for (const auto& b : batch) nr.program.insert(nr.program.end(), {"--once", b.job_file.string()});
  nr.program.insert(nr.program.end(), {"--warmup", std::to_string(r.launch_skip), "--repeat",
                                       std::to_string(r.launch_count)});
  auto argv = ncu_profile_argv(nr);
  std::string collection =
      nr.set ? "--set " + *nr.set : "questions " + fmt::format("{}", fmt::join(nr.questions, ","));
  const std::string command = join_command(argv);
  for (const auto& b : batch) {
    KernelProfile& kp = profiles[b.profile];
    kp.provenance.command = command;
    kp.provenance.collection = collection;
    kp.session_kernels = static_cast<int>(batch.size());
  }
  r.log(batch.size() == 1
            ? "profiling " + profiles[batch[0].profile].provenance.variant + " under ncu"
            : fmt::format("profiling {} kernels in one ncu session", batch.size()));
  std::error_code ec;
  fs::create_directories(session_dir, ec);
  auto t0 = std::chrono::steady_clock::now();
  CommandResult run = sc.ctx.runner.run(
      argv, std::chrono::milliseconds(
                static_cast<long>(r.timeout_s * 1000 * static_cast<double>(batch.size()))));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& b : batch) profiles[b.profile].ncu_wall_s = wall;
  (void)write_text_atomic(session_dir / "ncu.log", run.out + run.err);
  NcuOutcome outcome = classify_ncu_run(run);
  fs::path rep = session_dir / "profile.ncu-rep";
  auto each = [&](auto&& f) {
    for (const auto& b : batch) f(b, profiles[b.profile]);
  };
  if (outcome.failure == NcuFailure::no_permission)
    return each([&](const Staged& b, KernelProfile& kp) {
      degrade(*b.problem, b.check, sc, kp, ProfileStatus::no_counters, outcome.message);
    });
  // A job that failed under ncu leaves the others' launches in the report.
  if (outcome.failure != NcuFailure::none &&
      (outcome.failure != NcuFailure::program_failed || !fs::exists(rep)))
    return each([&](const Staged&, KernelProfile& kp) {
      fail(kp, ProfileStatus::profile_failed, outcome.message);
    });
  CommandResult csv =
      sc.ctx.runner.run(ncu_import_argv(r.ncu, rep), std::chrono::milliseconds(120000));
  if (!csv.ok())
    return each([&](const Staged&, KernelProfile& kp) {
      fail(kp, ProfileStatus::profile_failed, "ncu --import failed: " + csv.err.substr(0, 400));
    });
  if (batch.size() > 1) (void)write_text_atomic(session_dir / "profile.csv", csv.out);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Staged& b = batch[i];
    KernelProfile& kp = profiles[b.profile];
    kp.provenance.report_file = rep.string();
    kp.provenance.csv_file = (kp.dir / "profile.csv").string();
    std::string mine = ncu_csv_for_job(csv.out, i);
    (void)write_text_atomic(kp.dir / "profile.csv", mine);
    auto parsed = parse_ncu_csv(mine, kp.provenance.csv_file);
    if (!parsed) {
      fail(kp, ProfileStatus::profile_failed, parsed.error().message);
      continue;
    }
    if (parsed->launches.empty()) {
      fail(kp, ProfileStatus::profile_failed,
           outcome.failure != NcuFailure::none
               ? outcome.message
               : "ncu recorded no launch of it in its range (" + ncu_job_range(i) + "); see " +
                     (session_dir / "ncu.log").string());
      continue;
    }
    auto target = select_kernel(*parsed, "");
    if (!target) {
      fail(kp, ProfileStatus::profile_failed, target.error().message);
      continue;
    }
    ExplainInputs in = explain_inputs(*b.problem, sc.device, sc.ceilings);
    in.profile = *target;
    kp.explanation = explain(in);
    write_profile_files(kp);
  }
}

void degrade(const Problem& p, const KernelCheck& kc, const SessionContext& sc, KernelProfile& kp,
             ProfileStatus status, const std::string& why) {
  kp.status = status;
  kp.error = why;
  ExplainInputs in = explain_inputs(p, sc.device, sc.ceilings);
  in.profile.kernel = kc.build.lowered_entry;
  in.profile.launches = 1;
  for (const auto& s : kc.seeds)
    if (s.kernel_ms > 0) in.time_s = s.kernel_ms * 1e-3;
  in.profile.metrics["launch__registers_per_thread"] = kc.resources.registers;
  Explanation e = explain(in);
  e.time_source = "one event-timed launch of kopt check (no counters)";
  e.bottleneck.rule = "no counters: " + why +
                      " The analysis is limited to timing, the cost-formula roofline "
                      "and the build's resources.";
  kp.explanation = std::move(e);
  write_profile_files(kp);
}

}  // namespace kopt::evaluate::profile_detail
