#pragma once
// kopt check's run (run_check, checker.cpp): the kernels chosen, resolved and built; the
// reference built and run on each seed, the wide and the secret one, and its fp64 twin
// (check_reference.cpp); each kernel run on every seed and compared with it, from files or on
// the device (check_kernels.cpp).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kopt/core/entropy.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/tensor_data.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt::evaluate::check_detail {
namespace fs = std::filesystem;

// A seed's inputs plus where the reference's outputs for it live.
struct SeedData : SeedInputs {
  std::map<std::string, fs::path> reference;  // outputs and inouts of the reference
  // The reference's tensors as read once for every kernel checked against them.
  mutable std::map<std::string, HostTensor> loaded;
  // The fp64 reference of the f32 outputs (make_fp64_reference), read once, and how far the
  // f32 reference's own outputs are from it.
  std::map<std::string, HostTensor> exact;
  std::map<std::string, double> reference_error;
  // The wide seed: its inputs' scale, and each output's atol factor (its reference's RMS over
  // the first seed's, at least 1).
  double input_scale = 1;
  std::map<std::string, double> atol_scale;
  // The device comparison (CheckOptions::compare_on_device): the key the reference's outputs
  // are kept under on the device (empty: in `reference`'s files), their summaries, and where
  // the fp64 reference of each f32 output is (beside `exact`, or in its place where the
  // reference is kept).
  std::string kept;
  std::map<std::string, OutputSummary> summaries;
  std::map<std::string, OutputSource> exact_at;
  OutputSource expected(const std::string& name) const {
    return kept.empty() ? OutputSource{{}, reference.at(name)} : OutputSource{kept, {}};
  }
};

// The tensor in `file` as `spec` at `shape` (empty where the file cannot be read).
HostTensor load_tensor(const fs::path& file, const TensorSpec& spec,
                       const std::vector<std::int64_t>& shape);
// The reference's output `t` for the seed, read on first use.
const HostTensor& reference_tensor(const SeedData& in, const TensorSpec& t);

class CheckRun {
 public:
  CheckRun(const Problem& p, const CheckOptions& o, CheckContext c) : m_p(p), m_o(o), m_ctx(c) {}

  Expected<CheckReport> run();

 private:
  Expected<void> select_kernels();
  Expected<void> select_points();
  void add_kernel(const KernelSpec& k, const std::map<std::string, std::int64_t>& sets);
  Expected<void> resolve_all();

  // check_reference.cpp: the reference, its seeds and their cache.
  Expected<void> build_reference(BuildCache& cache);
  // Reference outputs are a function of the reference build, the dims, the tensor specs and
  // the seed: cache them under that key.
  std::string reference_key(std::uint64_t seed) const { return reference_key(seed, m_p); }
  std::string reference_key(std::uint64_t seed, const Problem& drawn) const;
  RunJob run_job_for_reference(const SeedData& in, const fs::path& out_dir) const;
  // The secret seed's inputs and reference outputs, copied out of this run's scratch space
  // for a timing job (CheckOptions::secret_dir).
  Expected<void> keep_secret();
  // A seed nobody can know before the run, above 2^62 so that it is never one of the ordinary
  // small seeds.
  static std::uint64_t draw_secret_seed() { return unpredictable_u64() | (std::uint64_t{1} << 62); }
  Expected<SeedData> prepare_seed(std::uint64_t seed, bool secret = false,
                                  const Problem* drawn = nullptr);
  // CheckOptions::compare_on_device: a Python reference whose outputs kopt's Python process
  // keeps on the device, compared there with kernels that are all Python modules (their outputs
  // on the device of kopt's Python processes) or, where the outputs are large, also CUDA kernels
  // of kopt's own (their executor shares their outputs with that process: compare_where_kept).
  // Small outputs of CUDA kernels' checks go through the reference cache's files instead: a
  // check of them again then starts no Python at all.
  bool on_device() const {
    if (!m_o.compare_on_device || m_o.reference_only || !m_o.secret_dir.empty() ||
        m_report.kernels.empty() || m_p.reference.kind != ReferenceKind::python)
      return false;
    if (m_o.reference_on == ReferenceOn::files) return false;
    auto python = [](const KernelCheck& k) { return k.build.module_kind == ModuleKind::triton; };
    const auto& ks = m_report.kernels;
    if (std::all_of(ks.begin(), ks.end(), python)) return true;
    return (m_o.reference_on == ReferenceOn::device ||
            problem_tensor_bytes(m_p, Role::output) + problem_tensor_bytes(m_p, Role::inout) >=
                k_kept_from) &&
           std::all_of(ks.begin(), ks.end(),
                       [&](const KernelCheck& k) { return python(k) || compares_where_run(k); });
  }
  // A CUDA kernel's check keeps the reference's outputs on the device from this size on: a file
  // of them costs more than the start of a Python process (several seconds) from about here.
  static constexpr std::uintmax_t k_kept_from = std::uintmax_t{256} << 20;
  // A worker replaced since the reference's outputs were kept (a kernel that faulted or hung
  // took its Python process with it) kept them no more: the reference's kept runs again, before
  // the next comparison with them. Fails as kopt's environment where they cannot be kept again.
  Expected<void> keep_again();
  // CheckOptions::compare_on_device for a kernel of kopt's own on CUDA (a cubin or a solve()
  // library): its executor compares its outputs with the reference's files where they are
  // (backend/cuda/run_compare.hpp), the inputs by their hash; an output it had no room for, and
  // any on a backend that compares nothing itself (OpenCL), comes back as a file.
  bool compares_where_run(const KernelCheck& k) const {
    return m_o.compare_on_device && !m_o.reference_only &&
           (k.build.module_kind == ModuleKind::cubin ||
            k.build.module_kind == ModuleKind::solve_library);
  }
  // What the device must keep free beside a kept reference: a seed's tensors three times (the
  // fp64 reference's run holds them twice over, a kernel's run once, and their workspaces) and
  // 2 GiB for the comparisons. (Twice was too little: 38_L1Norm_'s four kept seeds of 8 GiB left
  // its fp64 run and then the candidate out of memory.)
  std::int64_t keep_margin() const {
    return static_cast<std::int64_t>(3 * problem_tensor_bytes(m_p)) + (std::int64_t{2} << 30);
  }
  // An output's RMS for the wide seed's atol scale: from the summary of a kept reference.
  double reference_rms(const SeedData& in, const TensorSpec& t) const;
  // The reference's outputs stay on the device: nothing here reads them (keep_reference_outputs).
  bool summarized_reference() const {
    return !m_o.keep_reference_outputs && !m_o.reference_only && m_report.kernels.empty() &&
           m_p.reference.kind == ReferenceKind::python;
  }
  // The wide seed (CheckOptions::wide_seed), before the secret one: seed first_seed + seeds, a
  // number no other seed of the run has, its float inputs k_wide_scale times wider.
  Expected<void> prepare_wide_seed();
  // An f32 problem with a Python reference: the reference once more with every float tensor
  // in f64, on the first seed, cached beside its f32 outputs. A kernel is then judged by its
  // distance to it against the f32 reference's own (Fp64Error): a lower precision cannot hide
  // under a loose tolerance. A reference that cannot run in f64 leaves a note, not a verdict.
  void make_fp64_reference(SeedData& in);
  // The fp64 reference of the device comparison: kept beside the f32 one where the device has
  // room (else in files), its distance to the f32 reference measured where both are.
  void make_fp64_reference_on_device(SeedData& in, const std::vector<const TensorSpec*>& outputs);
  // A ref.py's module-level atol / rtol, kept beside its cached outputs.
  void load_reference_tolerance(const fs::path& ref_dir);
  // ref.py's tolerance applies to tensors without their own, over the per-dtype one.
  Tolerance tolerance_for(const TensorSpec& t) const {
    if (!t.tolerance && m_ref_tolerance) return *m_ref_tolerance;
    return m_p.tolerance_for(t);
  }

  // The tolerance an output is compared with on this seed (the wide seed's atol scaled).
  Tolerance seed_tolerance(const SeedData& in, const TensorSpec& t) const {
    Tolerance tol = tolerance_for(t);
    if (auto f = in.atol_scale.find(t.name); f != in.atol_scale.end()) tol.atol *= f->second;
    return tol;
  }

  // check_kernels.cpp: each kernel on every seed, compared.
  void check_kernel(KernelCheck& kc);
  void run_seeds(KernelCheck& kc);
  // Output `t` as the device comparison judged it; its distance to the fp64 reference, where
  // there is one, joins kc.fp64.
  CompareResult compared_on_device(KernelCheck& kc, const SeedData& in, const TensorSpec& t,
                                   const DeviceComparison& d);
  // Output `t` read from the kernel's file and compared with the reference's here; nullopt where
  // either file is not whole (m_environment or kc's failure says why).
  std::optional<CompareResult> compared_from_files(KernelCheck& kc, const SeedCheck& sc,
                                                   const SeedData& in, const TensorSpec& t,
                                                   const fs::path& out_dir);
  static void merge_resources(ResourceUsage& into, const ResourceUsage& driver);

  const Problem& m_p;
  const CheckOptions& m_o;
  std::optional<Error> m_environment;  // a run kopt's environment failed: the check stops
  CheckContext m_ctx;
  CheckReport m_report;
  DeviceLimits m_limits = architectural_limits();
  ResolvedLaunch m_ref_launch;
  fs::path m_ref_module;
  std::string m_ref_entry;
  std::string m_ref_key;
  std::vector<SeedData> m_inputs;
  // The reference's runs whose outputs kopt's Python process kept (RunResult::kept), in their
  // order, and the worker's start that keeps them (WorkerClient::running_start).
  std::vector<RunJob> m_kept_jobs;
  int m_kept_by = 0;
  std::vector<fs::path> m_reference_dirs;                   // the cached references this check uses
  std::vector<std::map<std::string, std::int64_t>> m_sets;  // each KernelCheck's --set values
  std::optional<Tolerance> m_ref_tolerance;
  // What this check's kept references are named by on the device: new with each check, so that
  // the Python process drops an earlier check's.
  std::string m_keep_prefix = hex64(unpredictable_u64()) + "/";
  // Each seed's inputs and every kernel's outputs: in RAM where there is room (scratch_root).
  TempDir m_tmp{"kopt-check",
                problem_tensor_bytes(m_p) * static_cast<std::uintmax_t>(m_o.seeds + 1)};
};

}  // namespace kopt::evaluate::check_detail
