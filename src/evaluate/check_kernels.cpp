// kopt check's kernels (check_run.hpp): each run on every seed, its outputs compared with the
// reference's, judged on the device where they are or read from files here, and its fp64
// distance.
#include <fmt/format.h>

#include <chrono>

#include "check_precision.hpp"
#include "check_run.hpp"
#include "kopt/core/clock.hpp"

namespace kopt::evaluate::check_detail {
using nlohmann::json;

HostTensor load_tensor(const fs::path& file, const TensorSpec& spec,
                       const std::vector<std::int64_t>& shape) {
  HostTensor t{spec.name, spec.dtype, shape,
               read_binary_file(file).value_or(std::vector<std::byte>{})};
  return t;
}

const HostTensor& reference_tensor(const SeedData& in, const TensorSpec& t) {
  auto it = in.loaded.find(t.name);
  if (it == in.loaded.end())
    it = in.loaded.emplace(t.name, load_tensor(in.reference.at(t.name), t, in.shapes.at(t.name)))
             .first;
  return it->second;
}

namespace {

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

}  // namespace

void CheckRun::check_kernel(KernelCheck& kc) {
  auto t0 = std::chrono::steady_clock::now();
  run_seeds(kc);
  kc.check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CheckRun::run_seeds(KernelCheck& kc) {
  bool all_passed = true;
  for (const auto& in : m_inputs) {
    SeedCheck sc;
    sc.seed = in.seed;
    sc.input_scale = in.input_scale;
    fs::path out_dir = m_tmp.path() / ("seed" + std::to_string(in.seed)) / kc.kernel;
    RunJob job = kernel_job(m_p.name + "/" + kc.kernel + " " + point_to_string(kc.point), kc.build,
                            kc.launch, job_tensors(m_p, in, out_dir));
    // Compared where the outputs are: a Python candidate's by kopt's Python process, a kernel
    // of kopt's own by its executor where it can (an output it could not is read back).
    const bool device = on_device() || compares_where_run(kc);
    if (device)
      for (const auto& t : m_p.tensors)
        if (t.role != Role::input) {
          OutputComparison c{t.name, seed_tolerance(in, t), in.expected(t.name), std::nullopt};
          if (auto x = in.exact_at.find(t.name); x != in.exact_at.end()) c.exact = x->second;
          job.compare.push_back(std::move(c));
        }
    if (device)
      if (auto k = keep_again(); !k) {
        m_environment = k.error();
        return;
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
    std::size_t from_files = 0;
    for (const auto& t : m_p.tensors) {
      if (t.role == Role::input) continue;
      auto d = r.compared.find(t.name);
      if (d == r.compared.end())
        ++from_files;
      else
        sc.compared_on_device.push_back(t.name);
      std::optional<CompareResult> c = d != r.compared.end()
                                           ? compared_on_device(kc, in, t, d->second)
                                           : compared_from_files(kc, sc, in, t, out_dir);
      if (!c) return;  // no comparison to make: said, and the check stops for this kernel
      sc.passed = sc.passed && c->passed;
      sc.outputs.push_back(std::move(*c));
    }
    all_passed = all_passed && sc.passed;
    std::string took = from_files == 0
                           ? fmt::format("run and {} {:.1f} s", r.compared_how, run_s)
                           : fmt::format("run {:.1f} s, {}read and compared {:.1f} s", run_s,
                                         r.compared.empty() ? "" : r.compared_how + ", the rest ",
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

CompareResult CheckRun::compared_on_device(KernelCheck& kc, const SeedData& in, const TensorSpec& t,
                                           const DeviceComparison& d) {
  if (in.exact_at.count(t.name))
    if (auto e = fp64_error(m_p, kc.kernel, t.name, d.exact_rel_l2, in.reference_error.at(t.name)))
      kc.fp64.push_back(*e);
  return compare_result(d, t.name, seed_tolerance(in, t), in.shapes.at(t.name));
}

std::optional<CompareResult> CheckRun::compared_from_files(KernelCheck& kc, const SeedCheck& sc,
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

void CheckRun::merge_resources(ResourceUsage& into, const ResourceUsage& driver) {
  // The driver is authoritative for what it reports; ptxas alone knows spills.
  ResourceUsage merged = driver;
  merged.spill_store_bytes = into.spill_store_bytes;
  merged.spill_load_bytes = into.spill_load_bytes;
  into = merged;
}

}  // namespace kopt::evaluate::check_detail
