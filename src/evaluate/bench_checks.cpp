#include "bench_checks.hpp"

#include <algorithm>

namespace kopt::evaluate {

namespace {

bool has_inout(const Problem& p) {
  return std::any_of(p.tensors.begin(), p.tensors.end(),
                     [](const TensorSpec& t) { return t.role == Role::inout; });
}

// The CUDA or OpenCL timer verifies every variant's outputs (output_verifier.hpp). Not where
// no variant is left to time (a bench of the PyTorch baselines alone): a reference computed
// for nobody costs a run of the reference per seed, seconds on a problem of GBs.
bool timer_verifies(const Problem& p, const BenchRequest& r,
                    const std::vector<BenchVariant>& variants) {
  if (!r.options.verify_samples) return false;
  bool outputs = false;  // an inout is compared too (set back to its first values first)
  for (const auto& t : p.tensors)
    outputs = outputs || t.role == Role::output || t.role == Role::inout;
  bool timed = false;
  for (const auto& v : variants) {
    if (v.status != VariantStatus::ok) continue;
    if (is_python(v.build.module_kind) || v.build.module_kind == ModuleKind::cpu_library)
      return false;
    timed = true;
  }
  return outputs && timed;
}

}  // namespace

bool check_in_timing_possible(const Problem& p, const BenchRequest& r,
                              const std::vector<BenchVariant>& variants) {
  return r.check_in_timing && !r.compare && timer_verifies(p, r, variants);
}

bool secret_samples_possible(const Problem& p, const BenchRequest& r,
                             const std::vector<BenchVariant>& variants) {
  return r.secret_samples && !has_inout(p) && timer_verifies(p, r, variants);
}

bool inouts_checked_in_timing(const Problem& p, const BenchRequest& r,
                              const std::vector<BenchVariant>& variants) {
  return has_inout(p) && timer_verifies(p, r, variants);
}

Expected<CheckReport> seed_reference(const Problem& p, const BenchRequest& r, CheckContext ctx,
                                     const std::filesystem::path& secret_dir) {
  CheckOptions co;
  co.reference_only = true;
  co.seeds = secret_dir.empty() ? 1 : 2;
  co.secret_seed = !secret_dir.empty();
  co.secret_dir = secret_dir;
  co.arch = r.arch;
  co.cache_root = r.references_root;
  auto report = run_check(p, co, ctx);
  if (!report) return Unexpected(report.error());
  if (report->reference_files.empty())
    return Unexpected(environment_error("the reference produced no outputs"));
  return report;
}

void expect_reference(RunJob& job, const CheckReport& reference, bool golden) {
  for (auto& t : job.tensors) {
    if (auto f = reference.reference_files.find(t.name); f != reference.reference_files.end()) {
      if (golden || t.role == Role::inout) t.expected_path = f->second;
      t.tolerance = reference.reference_tolerances.at(t.name);
    }
    if (auto f = reference.secret_input_files.find(t.name); f != reference.secret_input_files.end())
      t.secret_input_path = f->second;
    if (auto d = reference.secret_input_draws.find(t.name); d != reference.secret_input_draws.end())
      t.secret_draw = d->second;
    if (auto f = reference.secret_reference_files.find(t.name);
        f != reference.secret_reference_files.end())
      t.secret_expected_path = f->second;
  }
}

void mark_wrong(std::vector<BenchVariant>& variants, const BenchResult& result) {
  for (std::size_t i = 0; i < variants.size() && i < result.series.size(); ++i) {
    const std::string& failure = result.series[i].verification.check_failure;
    BenchVariant& v = variants[i];
    if (failure.empty() || v.status != VariantStatus::ok) continue;
    v.status = VariantStatus::wrong;
    v.error = "kopt check (in the timing job, seed 1): " + failure + "; not timed";
  }
}

Expected<void> check_variants(const Problem& p, const BenchRequest& r, CheckContext ctx,
                              std::vector<BenchVariant>& variants) {
  CheckOptions co;
  std::vector<BenchVariant*> checked;
  for (auto& v : variants) {
    if (v.status != VariantStatus::ok) continue;
    co.points.push_back(
        {v.kernel, std::map<std::string, std::int64_t>(v.point.begin(), v.point.end())});
    checked.push_back(&v);
  }
  if (checked.empty()) return {};
  co.seeds = 1;
  co.jobs = r.jobs;
  co.arch = r.arch;
  co.cache_root = r.references_root;
  co.compare_on_device = r.options.verify_on != VerifyOn::host;  // as the timer compares
  auto report = run_check(p, co, ctx);
  if (!report) return Unexpected(report.error());
  for (std::size_t i = 0; i < checked.size() && i < report->kernels.size(); ++i) {
    const KernelCheck& kc = report->kernels[i];
    BenchVariant& v = *checked[i];
    v.check_s = kc.check_s;
    v.precision = kc.precision;
    v.precision_note = kc.precision_note;
    if (kc.status != KernelStatus::passed) {
      v.status = VariantStatus::wrong;
      v.error = "kopt check " + std::string(kernel_status_name(kc.status)) +
                (kc.error.empty() ? "" : ": " + kc.error) + "; not timed";
    }
  }
  return {};
}

}  // namespace kopt::evaluate
