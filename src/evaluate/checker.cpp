#include "kopt/evaluate/checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "check_precision.hpp"
#include "kopt/backend/cpu_reference.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/entropy.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/evaluate/fits.hpp"
#include "kopt/evaluate/reference_cache.hpp"
#include "kopt/evaluate/sanitize.hpp"
#include "kopt/evaluate/variant_jobs.hpp"
#include "kopt/problem/tensor_data.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
using nlohmann::json;

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

namespace {

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
  // the fp64 reference of each f32 output is (in place of `exact`).
  std::string kept;
  std::map<std::string, OutputSummary> summaries;
  std::map<std::string, OutputSource> exact_at;
  OutputSource expected(const std::string& name) const {
    return kept.empty() ? OutputSource{{}, reference.at(name)} : OutputSource{kept, {}};
  }
};

HostTensor load_tensor(const fs::path& file, const TensorSpec& spec,
                       const std::vector<std::int64_t>& shape) {
  HostTensor t{spec.name, spec.dtype, shape,
               read_binary_file(file).value_or(std::vector<std::byte>{})};
  return t;
}

// The reference's output `t` for the seed, read on first use.
const HostTensor& reference_tensor(const SeedData& in, const TensorSpec& t) {
  auto it = in.loaded.find(t.name);
  if (it == in.loaded.end())
    it = in.loaded.emplace(t.name, load_tensor(in.reference.at(t.name), t, in.shapes.at(t.name)))
             .first;
  return it->second;
}

// A comparison made on the device, as the checker's own compare_tensors reports one.
CompareResult compare_result(const DeviceComparison& d, const std::string& name, Tolerance tol,
                             const std::vector<std::int64_t>& shape) {
  CompareResult c;
  c.tensor = name;
  c.numel = d.numel;
  c.tolerance = tol;
  c.max_abs_err = d.max_abs_err;
  c.max_rel_err = d.max_rel_err;
  c.rel_l2_err = d.rel_l2_err;
  c.mismatches = d.mismatches;
  c.nan_count = d.nan;
  c.inf_count = d.inf;
  c.unwritten = d.unwritten;
  for (const auto& m : d.first)
    c.first_mismatches.push_back({m.flat, unflatten(m.flat, shape), m.got, m.expected});
  c.passed = d.mismatches == 0 && d.numel == shape_numel(shape);
  return c;
}

class CheckRun {
 public:
  CheckRun(const Problem& p, const CheckOptions& o, CheckContext c) : m_p(p), m_o(o), m_ctx(c) {}

  Expected<CheckReport> run() {
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
      requests.push_back(
          compile_request(m_p, *m_p.find_kernel(kc.kernel), kc.point, m_report.arch));
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

 private:
  Expected<void> select_kernels() {
    if (m_o.reference_only) return {};
    if (!m_o.points.empty()) return select_points();
    auto chosen = kopt::select_kernels(m_p, m_o.kernels);
    if (!chosen) return Unexpected(chosen.error());
    if (auto used = check_assignments_used(m_p, *chosen, m_o.sets, "--set"); !used) return used;
    for (const KernelSpec* k : *chosen) add_kernel(*k, m_o.sets);
    return {};
  }

  Expected<void> select_points() {
    for (const auto& p : m_o.points) {
      const KernelSpec* k = m_p.find_kernel(p.kernel);
      if (!k)
        return Unexpected(bad_input("no kernel named '" + p.kernel + "'", m_p.spec_path.string()));
      if (auto used = check_assignments_used(m_p, {k}, p.sets, "--set"); !used) return used;
      add_kernel(*k, p.sets);
    }
    return {};
  }

  void add_kernel(const KernelSpec& k, const std::map<std::string, std::int64_t>& sets) {
    KernelCheck kc;
    kc.kernel = k.name;
    kc.source = (m_p.dir / k.source).string();
    m_report.kernels.push_back(kc);
    m_sets.push_back(sets);
  }

  Expected<void> resolve_all() {
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

  Expected<void> build_reference(BuildCache& cache) {
    const KernelSpec& k = m_p.reference.kernel;
    Error broken = bad_input("", m_p.spec_path.string(), k.where.line, "reference");
    if (m_p.reference.kind == ReferenceKind::cuda) {
      auto b = cache.build(compile_request(m_p, k, {}, m_report.arch));
      if (!b) return Unexpected(b.error());
      if (!b->ok) {
        broken.message = "the CUDA reference does not compile:\n" + b->log;
        return Unexpected(broken);
      }
      m_ref_module = b->cubin_path;
      m_ref_entry = b->lowered_entry;
      m_ref_key = b->key;
    } else if (m_p.reference.kind == ReferenceKind::python) {
      // A ref.py is its own build: its content keys the cached outputs.
      m_ref_module = fs::absolute(m_p.dir / k.source);
      auto text = read_text_file(m_ref_module);
      if (!text)
        return Unexpected(bad_input(text.error().message, m_p.spec_path.string(), k.where.line,
                                    "reference.source"));
      m_ref_entry = k.entry;
      Sha256 h;
      h.field("ref.py").field(*text);
      // A ref.py may import its neighbours (an imported KernelBench model.py): they key the
      // cached outputs too, kernels aside.
      std::set<fs::path> kernel_sources;
      for (const auto& kernel : m_p.kernels)
        for (const auto& src : kernel.sources.empty() ? std::vector{kernel.source} : kernel.sources)
          kernel_sources.insert(fs::absolute(m_p.dir / src).lexically_normal());
      std::vector<fs::path> neighbours;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(m_ref_module.parent_path(), ec))
        if (e.path().extension() == ".py" && e.path() != m_ref_module &&
            !kernel_sources.count(e.path().lexically_normal()))
          neighbours.push_back(e.path());
      std::sort(neighbours.begin(), neighbours.end());
      for (const auto& n : neighbours)
        if (auto t = read_text_file(n)) h.field(n.filename().string()).field(*t);
      m_ref_key = h.hex();
    } else {
      auto b = build_cpu_reference(m_ctx.runner, m_p.dir / k.source, m_p.reference.cxx_flags,
                                   m_o.cache_root / "cpu-references");
      if (!b) return Unexpected(b.error());
      if (!b->ok) {
        broken.message = "the C++ reference does not compile:\n" + b->log;
        return Unexpected(broken);
      }
      m_ref_module = b->library;
      m_ref_entry = k.entry;
      m_ref_key = b->library.parent_path().filename().string();
    }
    m_o.log("built the " + m_report.reference_kind + " reference");
    return {};
  }

  // Reference outputs are a function of the reference build, the dims, the tensor specs and
  // the seed: cache them under that key.
  std::string reference_key(std::uint64_t seed) const { return reference_key(seed, m_p); }
  std::string reference_key(std::uint64_t seed, const Problem& drawn) const {
    Sha256 h;
    h.field("kopt-reference-v1").field(m_ref_key).field(std::to_string(seed));
    for (const auto& d : m_p.dims) h.field(d.name).field(std::to_string(d.value));
    for (const auto& t : drawn.tensors) {
      h.field(t.name)
          .field(dtype_name(t.dtype))
          .field(role_name(t.role))
          .field(init_kind_name(t.init.kind));
      h.field(std::to_string(t.init.a)).field(std::to_string(t.init.b));
      for (const auto& e : t.shape) h.field(e.text());
    }
    h.field(to_json(run_job_for_reference({}, {})).dump());
    return h.hex();
  }

  RunJob run_job_for_reference(const SeedData& in, const fs::path& out_dir) const {
    RunJob job;
    job.label = m_p.name + "/reference";
    job.kind = m_p.reference.kind == ReferenceKind::cuda  ? ModuleKind::cubin
               : m_p.reference.kind == ReferenceKind::cpp ? ModuleKind::cpu_library
                                                          : ModuleKind::python_reference;
    job.scalars = m_ref_launch.scalars;
    job.entry = m_ref_entry;
    job.grid = m_ref_launch.grid;
    job.block = m_ref_launch.block;
    job.shared_mem = m_ref_launch.shared_mem;
    job.args = m_ref_launch.args;
    if (!in.shapes.empty()) {
      job.module_path = m_ref_module;
      job.tensors = job_tensors(m_p, in, out_dir);
    }
    return job;
  }

  // A seed nobody can know before the run, above 2^62 so that it is never one of the ordinary
  // small seeds.
  // The secret seed's inputs and reference outputs, copied out of this run's scratch space
  // for a timing job (CheckOptions::secret_dir).
  Expected<void> keep_secret() {
    if (m_o.secret_dir.empty() || !m_report.secret_seed || m_inputs.empty()) return {};
    const SeedData& s = m_inputs.back();
    std::error_code ec;
    fs::create_directories(m_o.secret_dir, ec);
    auto copy = [&](const fs::path& from, const std::string& name) -> Expected<fs::path> {
      fs::path to = m_o.secret_dir / name;
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec)
        return Unexpected(environment_error("cannot keep the secret seed's " + from.string() +
                                            ": " + ec.message()));
      return to;
    };
    for (const auto& [name, file] : s.files) {
      if (auto m = materialize_seed_input(m_p, s, name); !m) return Unexpected(m.error());
      auto c = copy(file, name + ".input.bin");
      if (!c) return Unexpected(c.error());
      m_report.secret_input_files[name] = *c;
    }
    for (const auto& [name, file] : s.reference) {
      auto c = copy(file, name + ".expected.bin");
      if (!c) return Unexpected(c.error());
      m_report.secret_reference_files[name] = *c;
    }
    return {};
  }

  static std::uint64_t draw_secret_seed() { return unpredictable_u64() | (std::uint64_t{1} << 62); }

  Expected<SeedData> prepare_seed(std::uint64_t seed, bool secret = false,
                                  const Problem* drawn = nullptr) {
    const Problem& draw = drawn ? *drawn : m_p;
    fs::path dir = m_tmp.path() / ("seed" + std::to_string(seed));
    SeedData in;
    // A secret seed's reference is computed for this run only: caching it would fill the
    // cache with references nobody asks for again.
    fs::path ref_dir = secret ? dir / "reference-secret"
                              : m_o.cache_root / "references" / reference_key(seed, draw);
    // Compared on the device: computed and kept there, no file of it cached nor read.
    bool cached = !secret && !on_device();
    Scope dims = m_p.dim_scope();
    for (const auto& t : m_p.tensors)
      if (t.role != Role::input) {
        in.reference[t.name] = ref_dir / (t.name + ".bin");
        // A cached output of another size (cut short, or a cache of another kopt's) is made
        // again, never compared with.
        auto shape = tensor_shape(t, dims);
        std::error_code ec;
        cached =
            cached && shape &&
            fs::file_size(in.reference[t.name], ec) == shape_numel(*shape) * dtype_size(t.dtype) &&
            !ec;
      }
    // Only the reference's outputs asked for, and cached: no inputs to draw and write.
    if (!(cached && m_o.reference_only)) {
      auto written = write_seed_inputs(draw, seed, dir);
      if (!written) return Unexpected(written.error());
      static_cast<SeedInputs&>(in) = std::move(*written);
    }
    in.seed = seed;
    if (!secret) m_reference_dirs.push_back(ref_dir);  // this check's: never trimmed by it
    if (cached) {
      touch_reference(ref_dir);
      load_reference_tolerance(ref_dir);
      m_o.log("seed " + std::to_string(seed) + ": reference outputs from the cache");
      return in;
    }
    if (!secret) m_report.reference_cached = false;
    fs::path scratch = dir / "reference";
    const auto started = std::chrono::steady_clock::now();
    RunJob job = run_job_for_reference(in, scratch);
    job.summarize_outputs = summarized_reference();
    if (on_device()) {
      job.keep_outputs = m_keep_prefix + std::to_string(seed);
      job.keep_margin = keep_margin();
    }
    RunResult r = m_ctx.worker.run(job);
    const double run_s = seconds_since(started);
    if (r.environment)
      return Unexpected(
          environment_error("the reference on seed " + std::to_string(seed) + ": " + r.error));
    if (!r.ok())
      return Unexpected(bad_input("the reference failed on seed " + std::to_string(seed) + " (" +
                                      std::string(run_status_name(r.status)) + "): " + r.error,
                                  m_p.spec_path.string(), m_p.reference.kernel.where.line,
                                  "reference"));
    for (const auto& [name, sum] : in.checksums)
      if (r.input_checksums[name] != sum)
        return Unexpected(bad_input("the reference modified input tensor '" + name + "'",
                                    m_p.spec_path.string(), m_p.reference.kernel.where.line,
                                    "reference"));
    if (r.kept) {
      in.kept = job.keep_outputs;
      in.summaries = r.outputs;
      if (r.reference_atol >= 0 || r.reference_rtol >= 0)
        m_ref_tolerance =
            Tolerance{std::max(r.reference_atol, 0.0), std::max(r.reference_rtol, 0.0)};
      m_o.log(
          fmt::format("seed {}{}: reference computed, kept on the device for the comparisons "
                      "(run {:.1f} s)",
                      seed, secret ? " (secret)" : "", run_s));
      return in;
    }
    if (job.summarize_outputs) {
      m_report.reference_outputs[seed] = r.outputs;
      m_o.log(
          fmt::format("seed {}: reference computed, its outputs summarized on the device "
                      "(run {:.1f} s)",
                      seed, run_s));
      return in;
    }
    for (const auto& [name, file] : in.reference)
      if (auto w = move_file_atomic(scratch / (name + ".bin"), file); !w)
        return Unexpected(w.error());
    if (r.reference_atol >= 0 || r.reference_rtol >= 0) {
      nlohmann::json tol{{"atol", std::max(r.reference_atol, 0.0)},
                         {"rtol", std::max(r.reference_rtol, 0.0)}};
      (void)write_text_atomic(ref_dir / "tolerance.json", tol.dump());
      load_reference_tolerance(ref_dir);
    }
    if (!secret) {  // the cache stays within its bound (reference_cache.hpp)
      fs::path root = m_o.cache_root / "references";
      for (const auto& gone : trim_references(root, reference_cache_bound(root), m_reference_dirs))
        m_o.log("reference cache: removed " + gone.filename().string() + ", used longest ago");
    }
    m_o.log(
        fmt::format("seed {}{} (run {:.1f} s, kept {:.1f} s)", seed,
                    secret ? " (secret): reference computed" : ": reference computed and cached",
                    run_s, seconds_since(started) - run_s));
    return in;
  }

  // CheckOptions::compare_on_device: a Python reference, and kernels that are all Python
  // modules (their outputs on the device of kopt's Python processes).
  bool on_device() const {
    if (!m_o.compare_on_device || m_o.reference_only || !m_o.secret_dir.empty() ||
        m_report.kernels.empty() || m_p.reference.kind != ReferenceKind::python)
      return false;
    return std::all_of(m_report.kernels.begin(), m_report.kernels.end(), [](const KernelCheck& k) {
      return k.build.module_kind == ModuleKind::triton;
    });
  }

  // What the device must keep free beside a kept reference: a seed's tensors three times (the
  // fp64 reference's run holds them twice over, a kernel's run once, and their workspaces) and
  // 2 GiB for the comparisons. (Twice was too little: 38_L1Norm_'s four kept seeds of 8 GiB left
  // its fp64 run and then the candidate out of memory.)
  std::int64_t keep_margin() const {
    return static_cast<std::int64_t>(3 * problem_tensor_bytes(m_p)) + (std::int64_t{2} << 30);
  }

  // An output's RMS for the wide seed's atol scale: from the summary of a kept reference.
  double reference_rms(const SeedData& in, const TensorSpec& t) const {
    if (auto s = in.summaries.find(t.name); !in.kept.empty() && s != in.summaries.end())
      return s->second.rms;
    return rms(reference_tensor(in, t));
  }

  // The reference's outputs stay on the device: nothing here reads them (keep_reference_outputs).
  bool summarized_reference() const {
    return !m_o.keep_reference_outputs && !m_o.reference_only && m_report.kernels.empty() &&
           m_p.reference.kind == ReferenceKind::python;
  }

  // The wide seed (CheckOptions::wide_seed), before the secret one: seed first_seed + seeds, a
  // number no other seed of the run has, its float inputs k_wide_scale times wider.
  Expected<void> prepare_wide_seed() {
    if (!m_o.wide_seed || m_o.seeds < 2 || m_o.reference_only || m_inputs.empty() ||
        m_report.kernels.empty())
      return {};
    auto wide = widened(m_p, k_wide_scale);
    if (!wide) return {};
    std::uint64_t seed = m_o.first_seed + static_cast<std::uint64_t>(m_o.seeds);
    auto s = prepare_seed(seed, false, &*wide);
    if (!s) {
      // A reference that refuses inputs so far out (a domain check, an overflow it reports) is
      // the problem's limit, not a failure of the command: the check goes on without the seed.
      if (s.error().kind != ErrorKind::bad_input) return Unexpected(s.error());
      m_report.wide_seed_note = "no wide seed: " + s.error().message;
      m_o.log(m_report.wide_seed_note);
      return {};
    }
    s->input_scale = k_wide_scale;
    const SeedData& first = m_inputs.front();
    for (const auto& t : m_p.tensors) {
      if (t.role == Role::input) continue;
      double a = reference_rms(first, t), b = reference_rms(*s, t);
      s->atol_scale[t.name] = a > 0 && b > a && std::isfinite(b) ? b / a : 1.0;
    }
    m_report.wide_seed = seed;
    m_report.seeds.push_back(seed);
    m_inputs.push_back(std::move(*s));
    return {};
  }

  // An f32 problem with a Python reference: the reference once more with every float tensor
  // in f64, on the first seed, cached beside its f32 outputs. A kernel is then judged by its
  // distance to it against the f32 reference's own (Fp64Error): a lower precision cannot hide
  // under a loose tolerance. A reference that cannot run in f64 leaves a note, not a verdict.
  void make_fp64_reference(SeedData& in) {
    if (m_p.reference.kind != ReferenceKind::python || m_o.reference_only || in.shapes.empty() ||
        m_report.kernels.empty())
      return;
    std::vector<const TensorSpec*> outputs;
    for (const auto& t : m_p.tensors)
      if (t.role != Role::input && t.dtype == DType::f32) outputs.push_back(&t);
    if (outputs.empty()) return;
    if (on_device()) return make_fp64_reference_on_device(in, outputs);
    fs::path dir = m_o.cache_root / "references" / reference_key(in.seed) / "f64";
    std::map<std::string, fs::path> files;
    bool cached = true;
    for (const auto* t : outputs) {
      files[t->name] = dir / (t->name + ".bin");
      cached = cached && fs::is_regular_file(files[t->name]);
    }
    auto none = [&](const std::string& why) {
      m_report.fp64_note = "no fp64 reference: " + why.substr(0, why.find('\n'));
      m_o.log(m_report.fp64_note);
    };
    if (!cached) {
      fs::path scratch = m_tmp.path() / ("seed" + std::to_string(in.seed)) / "reference-f64";
      RunJob job = run_job_for_reference(in, scratch);
      job.in_f64 = true;
      RunResult r = m_ctx.worker.run(job);
      if (!r.ok()) return none("the reference did not run in f64 (" + r.error + ")");
      for (const auto& [name, file] : files)
        if (auto w = move_file_atomic(scratch / (name + ".bin"), file); !w)
          return none(w.error().message);
    }
    for (const auto* t : outputs) {
      const auto& shape = in.shapes.at(t->name);
      HostTensor exact{t->name, DType::f64, shape,
                       read_binary_file(files[t->name]).value_or(std::vector<std::byte>{})};
      if (exact.bytes() != exact.numel() * 8)
        return none("its output '" + t->name + "' in f64 has " + std::to_string(exact.bytes()) +
                    " bytes, not " + std::to_string(exact.numel() * 8));
      in.reference_error[t->name] = relative_l2(reference_tensor(in, *t), exact);
      in.exact.emplace(t->name, std::move(exact));
    }
    m_report.fp64_seed = in.seed;
    m_o.log("seed " + std::to_string(in.seed) + ": fp64 reference " +
            (cached ? "from the cache" : "computed and cached"));
  }

  // The fp64 reference of the device comparison: kept beside the f32 one where the device has
  // room (else in files), its distance to the f32 reference measured where both are.
  void make_fp64_reference_on_device(SeedData& in, const std::vector<const TensorSpec*>& outputs) {
    fs::path scratch = m_tmp.path() / ("seed" + std::to_string(in.seed)) / "reference-f64";
    RunJob job = run_job_for_reference(in, scratch);
    job.in_f64 = true;
    job.keep_outputs = m_keep_prefix + std::to_string(in.seed) + "/f64";
    job.keep_margin = keep_margin();
    for (const auto* t : outputs) job.exact_of[t->name] = in.expected(t->name);
    RunResult r = m_ctx.worker.run(job);
    if (!r.ok()) {
      m_report.fp64_note = "no fp64 reference: the reference did not run in f64 (" +
                           r.error.substr(0, r.error.find('\n')) + ")";
      m_o.log(m_report.fp64_note);
      return;
    }
    for (const auto* t : outputs) {
      auto e = r.exact_error.find(t->name);
      if (e == r.exact_error.end()) continue;
      in.reference_error[t->name] = e->second;
      in.exact_at[t->name] = r.kept ? OutputSource{job.keep_outputs, {}}
                                    : OutputSource{{}, scratch / (t->name + ".bin")};
    }
    m_report.fp64_seed = in.seed;
    m_o.log("seed " + std::to_string(in.seed) + ": fp64 reference computed" +
            (r.kept ? ", kept on the device" : ""));
  }

  // A ref.py's module-level atol / rtol, kept beside its cached outputs.
  void load_reference_tolerance(const fs::path& ref_dir) {
    auto text = read_text_file(ref_dir / "tolerance.json");
    if (!text) return;
    try {
      auto j = nlohmann::json::parse(*text);
      m_ref_tolerance = Tolerance{j.value("atol", 0.0), j.value("rtol", 0.0)};
    } catch (const std::exception&) {
    }
  }

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

  void check_kernel(KernelCheck& kc) {
    auto t0 = std::chrono::steady_clock::now();
    run_seeds(kc);
    kc.check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void run_seeds(KernelCheck& kc) {
    bool all_passed = true;
    for (const auto& in : m_inputs) {
      SeedCheck sc;
      sc.seed = in.seed;
      sc.input_scale = in.input_scale;
      fs::path out_dir = m_tmp.path() / ("seed" + std::to_string(in.seed)) / kc.kernel;
      RunJob job = kernel_job(m_p.name + "/" + kc.kernel + " " + point_to_string(kc.point),
                              kc.build, kc.launch, job_tensors(m_p, in, out_dir));
      const bool device = on_device();
      if (device)
        for (const auto& t : m_p.tensors)
          if (t.role != Role::input) {
            OutputComparison c{t.name, seed_tolerance(in, t), in.expected(t.name), std::nullopt};
            if (auto x = in.exact_at.find(t.name); x != in.exact_at.end()) c.exact = x->second;
            job.compare.push_back(std::move(c));
          }
      const auto started = std::chrono::steady_clock::now();
      RunResult r = m_ctx.worker.run(job);
      const double run_s = seconds_since(started);
      if (r.environment) {  // kopt's failure: no verdict on the kernel (run() says so)
        m_environment = environment_error(kc.kernel + ": " + r.error);
        return;
      }
      sc.status = r.status;
      sc.error = r.error;
      sc.kernel_ms = r.kernel_ms;
      if (r.resources.registers >= 0) merge_resources(kc.resources, r.resources);
      if (!r.ok()) {
        kc.status = KernelStatus::run_failed;
        kc.error = std::string(run_status_name(r.status)) + ": " + r.error;
        kc.seeds.push_back(sc);
        m_o.log(kc.kernel + " seed " + std::to_string(in.seed) + ": FAILED (" + kc.error + ")");
        return;  // the same launch would fail again; the worker has been replaced
      }
      sc.passed = true;
      for (const auto& [name, sum] : in.checksums)
        if (r.input_checksums[name] != sum) {
          sc.modified_inputs.push_back(name);
          sc.passed = false;
        }
      for (const auto& t : m_p.tensors) {
        if (t.role == Role::input) continue;
        std::optional<CompareResult> c = device
                                             ? compared_on_device(kc, in, t, r.compared.at(t.name))
                                             : compared_from_files(kc, sc, in, t, out_dir);
        if (!c) return;  // no comparison to make: said, and the check stops for this kernel
        sc.passed = sc.passed && c->passed;
        sc.outputs.push_back(std::move(*c));
      }
      all_passed = all_passed && sc.passed;
      std::string took = device ? fmt::format("run and {} {:.1f} s", r.compared_how, run_s)
                                : fmt::format("run {:.1f} s, read and compared {:.1f} s", run_s,
                                              seconds_since(started) - run_s);
      m_o.log(fmt::format("{} seed {}: {} ({})", kc.kernel, in.seed, sc.passed ? "ok" : "MISMATCH",
                          took));
      kc.seeds.push_back(std::move(sc));
    }
    kc.status = all_passed ? KernelStatus::passed : KernelStatus::mismatch;
    for (const auto& e : kc.fp64)
      if (kc.status == KernelStatus::passed && !e.passed) {
        kc.status = KernelStatus::lower_precision;
        kc.error = fp64_verdict(e);
        m_o.log(kc.kernel + ": LOWER PRECISION (" + kc.error + ")");
      }
  }

  // Output `t` as the device comparison judged it; its distance to the fp64 reference, where
  // there is one, joins kc.fp64.
  CompareResult compared_on_device(KernelCheck& kc, const SeedData& in, const TensorSpec& t,
                                   const DeviceComparison& d) {
    if (in.exact_at.count(t.name))
      if (auto e =
              fp64_error(m_p, kc.kernel, t.name, d.exact_rel_l2, in.reference_error.at(t.name)))
        kc.fp64.push_back(*e);
    return compare_result(d, t.name, seed_tolerance(in, t), in.shapes.at(t.name));
  }

  // Output `t` read from the kernel's file and compared with the reference's here; nullopt where
  // either file is not whole (m_environment or kc's failure says why).
  std::optional<CompareResult> compared_from_files(KernelCheck& kc, const SeedCheck& sc,
                                                   const SeedData& in, const TensorSpec& t,
                                                   const fs::path& out_dir) {
    const auto& shape = in.shapes.at(t.name);
    HostTensor got = load_tensor(out_dir / (t.name + ".bin"), t, shape);
    const HostTensor& expected = reference_tensor(in, t);
    const std::size_t bytes = shape_numel(shape) * dtype_size(t.dtype);
    // What kopt kept of the reference's outputs, whole, or kopt could not keep it (a full
    // disk): the machine's failure, no verdict on the kernel.
    if (expected.data.size() != bytes) {
      m_environment = environment_error(fmt::format(
          "the reference's output '{}' of seed {} is {} of {} bytes at {}: kopt could not "
          "keep it (a full disk?)",
          t.name, in.seed, expected.data.size(), bytes, in.reference.at(t.name).string()));
      return std::nullopt;
    }
    // An output that did not come back whole after a run that succeeded is no comparison
    // to make, and said as such (it was removed from the candidate's room, or cut short).
    if (got.data.size() != bytes) {
      kc.status = KernelStatus::run_failed;
      kc.error = fmt::format(
          "its output '{}' came back with {} of {} bytes after a run that "
          "succeeded on seed {}",
          t.name, got.data.size(), bytes, in.seed);
      kc.seeds.push_back(sc);
      m_o.log(kc.kernel + " seed " + std::to_string(in.seed) + ": FAILED (" + kc.error + ")");
      return std::nullopt;
    }
    if (auto x = in.exact.find(t.name); x != in.exact.end())
      if (auto e = fp64_error(m_p, kc.kernel, got, x->second, in.reference_error.at(t.name)))
        kc.fp64.push_back(*e);
    return compare_tensors(got, expected, seed_tolerance(in, t));
  }

  static void merge_resources(ResourceUsage& into, const ResourceUsage& driver) {
    // The driver is authoritative for what it reports; ptxas alone knows spills.
    ResourceUsage merged = driver;
    merged.spill_store_bytes = into.spill_store_bytes;
    merged.spill_load_bytes = into.spill_load_bytes;
    into = merged;
  }

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

}  // namespace

Expected<CheckReport> run_check(const Problem& problem, const CheckOptions& options,
                                CheckContext ctx) {
  try {
    CheckRun run(problem, options, ctx);
    return run.run();
  } catch (const std::exception& e) {  // e.g. no temp dir; never a candidate's doing
    return Unexpected(internal_error(std::string("check: ") + e.what()));
  }
}

}  // namespace kopt::evaluate
