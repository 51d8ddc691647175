// kopt check's reference (check_run.hpp): built, its outputs per seed computed or read from the
// cache, kept on the device or summarized where nothing reads them, and its fp64 twin.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "check_precision.hpp"
#include "check_run.hpp"
#include "kopt/backend/cpu_reference.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/evaluate/reference_cache.hpp"

namespace kopt::evaluate::check_detail {
using nlohmann::json;

Expected<void> CheckRun::build_reference(BuildCache& cache) {
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

std::string CheckRun::reference_key(std::uint64_t seed, const Problem& drawn) const {
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

RunJob CheckRun::run_job_for_reference(const SeedData& in, const fs::path& out_dir) const {
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

Expected<void> CheckRun::keep_secret() {
  if (m_o.secret_dir.empty() || !m_report.secret_seed || m_inputs.empty()) return {};
  const SeedData& s = m_inputs.back();
  std::error_code ec;
  fs::create_directories(m_o.secret_dir, ec);
  // Linked where the file system allows (GBs are not copied), else copied.
  auto copy = [&](const fs::path& from, const std::string& name) -> Expected<fs::path> {
    fs::path to = m_o.secret_dir / name;
    fs::remove(to, ec);
    fs::create_hard_link(from, to, ec);
    if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Unexpected(environment_error("cannot keep the secret seed's " + from.string() + ": " +
                                          ec.message()));
    return to;
  };
  for (const auto& [name, file] : s.files) {
    // A drawn one is its recipe, which a timer draws where the kernel runs; its file is kept
    // only where the reference's run wrote it (a C++ reference's), else the worker writes it
    // for a timer that reads files: none is drawn on the CPU here.
    if (auto d = s.draws.find(name); d != s.draws.end()) {
      m_report.secret_input_draws[name] = d->second;
      if (!fs::is_regular_file(file, ec)) {
        m_report.secret_input_files[name] = m_o.secret_dir / (name + ".input.bin");
        continue;
      }
    }
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

Expected<SeedData> CheckRun::prepare_seed(std::uint64_t seed, bool secret, const Problem* drawn) {
  const Problem& draw = drawn ? *drawn : m_p;
  fs::path dir = m_tmp.path() / ("seed" + std::to_string(seed));
  SeedData in;
  // A secret seed's reference is computed for this run only: caching it would fill the
  // cache with references nobody asks for again.
  fs::path ref_dir =
      secret ? dir / "reference-secret" : m_o.cache_root / "references" / reference_key(seed, draw);
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
  // A CUDA reference's inputs drawn where it runs, left as drawn by their hashes there: no file
  // of them drawn on the CPU (a C++ reference's are; a Python one draws its own).
  job.hash_inputs = m_o.compare_on_device;
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
    m_kept_jobs.push_back(job);
    m_kept_by = m_ctx.worker.running_start();
    in.kept = job.keep_outputs;
    in.summaries = r.outputs;
    if (r.reference_atol >= 0 || r.reference_rtol >= 0)
      m_ref_tolerance = Tolerance{std::max(r.reference_atol, 0.0), std::max(r.reference_rtol, 0.0)};
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
  m_o.log(fmt::format("seed {}{} (run {:.1f} s, kept {:.1f} s)", seed,
                      secret ? " (secret): reference computed" : ": reference computed and cached",
                      run_s, seconds_since(started) - run_s));
  return in;
}

double CheckRun::reference_rms(const SeedData& in, const TensorSpec& t) const {
  if (auto s = in.summaries.find(t.name); !in.kept.empty() && s != in.summaries.end())
    return s->second.rms;
  return rms(reference_tensor(in, t));
}

Expected<void> CheckRun::prepare_wide_seed() {
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

void CheckRun::make_fp64_reference(SeedData& in) {
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
    in.exact_at[t->name] = OutputSource{{}, files[t->name]};  // for a comparison on the device
  }
  m_report.fp64_seed = in.seed;
  m_o.log("seed " + std::to_string(in.seed) + ": fp64 reference " +
          (cached ? "from the cache" : "computed and cached"));
}

void CheckRun::make_fp64_reference_on_device(SeedData& in,
                                             const std::vector<const TensorSpec*>& outputs) {
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
  if (r.kept) m_kept_jobs.push_back(job);
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

Expected<void> CheckRun::keep_again() {
  if (m_kept_jobs.empty() || m_ctx.worker.running_start() == m_kept_by) return {};
  const auto started = std::chrono::steady_clock::now();
  for (const RunJob& job : m_kept_jobs) {
    RunResult r = m_ctx.worker.run(job);
    if (!r.ok() || !r.kept)
      return Unexpected(environment_error(fmt::format(
          "the reference's outputs kept on the device went with the worker, replaced after a "
          "kernel failed, and could not be kept again ({}: {})",
          job.label, r.ok() ? "no room for them beside the device's other tensors now" : r.error)));
  }
  m_kept_by = m_ctx.worker.running_start();
  m_o.log(fmt::format(
      "the reference's outputs kept again on the device ({} runs, {:.1f} s): the worker was "
      "replaced after a kernel failed",
      m_kept_jobs.size(), seconds_since(started)));
  return {};
}

void CheckRun::load_reference_tolerance(const fs::path& ref_dir) {
  auto text = read_text_file(ref_dir / "tolerance.json");
  if (!text) return;
  try {
    auto j = nlohmann::json::parse(*text);
    m_ref_tolerance = Tolerance{j.value("atol", 0.0), j.value("rtol", 0.0)};
  } catch (const std::exception&) {
  }
}

}  // namespace kopt::evaluate::check_detail
