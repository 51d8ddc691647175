// A Python candidate's outputs compared where they were computed. The candidate's process
// shares its output tensors' device memory (CUDA IPC handles) and the trusted process, which
// kept the reference's outputs on the same device, compares them there: what crosses is handles
// and the comparison's summary, never a file of GBs. Where the driver will not share or open
// the memory (the CPU, a sandbox or a driver that refuses), the outputs go through files as
// before and are still compared by the trusted process. The candidate's process never compares
// anything itself: a check is never in code a candidate can reach. A CUDA kernel's outputs, in
// kopt's executor, are compared the same way where that process keeps the reference's
// (compare_kept): the executor shares them, so the reference's outputs never leave the device.
#include <fmt/format.h>

#include "kopt/backend/output_compare_kernel.hpp"
#include "kopt/backend/python/python_runner.hpp"
#include "kopt/problem/dtype.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

json python_source_json(const OutputSource& s, const std::string& name) {
  if (!s.key.empty()) return {{"key", s.key}, {"name", name}};
  return {{"path", s.path.string()}};
}

namespace {

const JobTensor* tensor_named(const RunJob& job, const std::string& name) {
  for (const auto& t : job.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// An unwritten element's bits as kopt's executors poison an output (compare_poison_bits), as
// the integer the Python worker reads them as: unsigned for one byte, signed for more
// (kopt_worker_compare's _bits_dtype).
std::int64_t executor_poison(DType d) {
  std::uint64_t bits = compare_poison_bits(d);
  const std::size_t n = dtype_size(d);
  if (n >= 2 && n < 8 && ((bits >> (8 * n - 1)) & 1)) bits |= ~std::uint64_t{0} << (8 * n);
  return static_cast<std::int64_t>(bits);
}

// The trusted process's "compare" request for the outputs of job.compare that `got` names
// (null: not this one), with their tolerances and where the reference's are; an output kopt's
// executor poisoned (`executor_outputs`) says its poison's bits.
template <class Got>
json compare_request(const RunJob& job, Got got, bool executor_outputs) {
  json outputs = json::array();
  for (const auto& c : job.compare) {
    const JobTensor* t = tensor_named(job, c.name);
    if (!t) continue;
    json where = got(c, *t);
    if (where.is_null()) continue;
    outputs.push_back({{"name", c.name},
                       {"dtype", dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"atol", c.tolerance.atol},
                       {"rtol", c.tolerance.rtol},
                       {"got", where},
                       {"poison", executor_outputs ? json(executor_poison(t->dtype)) : json()},
                       {"expected", python_source_json(c.expected, c.name)},
                       {"exact", c.exact ? python_source_json(*c.exact, c.name) : json()}});
  }
  return json{{"op", "compare"}, {"outputs", outputs}};
}

// The comparisons of `reply` into result.compared, one for each output in `names`; false where
// one is missing (result's failure says so).
bool take_comparisons(const json& reply, const std::vector<std::string>& names, RunResult& result) {
  const json compared = reply.value("compared", json::object());
  for (const auto& name : names) {
    if (!compared.contains(name)) {
      result.status = RunStatus::launch_failed;
      result.error = fmt::format("kopt's comparison returned nothing for output '{}'", name);
      result.environment = true;
      return false;
    }
    result.compared[name] = device_comparison_from_json(compared.at(name));
  }
  return true;
}

}  // namespace

void PythonRunner::compare_outputs(const RunJob& job, const json& run, const fs::path& after_dir,
                                   RunResult& result) {
  auto fail = [&](std::string why, bool environment) {
    result.status = RunStatus::launch_failed;
    result.error = std::move(why);
    result.environment = environment;
  };
  const json shared = run.value("shared", json());
  // The outputs: the handles the candidate shared, or the files it wrote (handed back from its
  // room to the job's paths).
  auto request = [&](bool through_files) {
    return compare_request(
        job,
        [&](const OutputComparison& c, const JobTensor& t) {
          return !through_files && shared.is_object() && shared.contains(c.name)
                     ? shared.at(c.name)
                     : json{{"path", t.output_path.string()}};
        },
        false);
  };
  bool through_files = !shared.is_object();
  result.compared_how = through_files
                            ? "compared on the device, its outputs through files (" +
                                  run.value("share_refused", std::string("not shared")) + ")"
                            : "compared on the device, its outputs shared (CUDA IPC)";
  Reply r = call(request(through_files), 600s, false);
  if (r.ok && r.result.contains("unopened")) {
    // kopt's processes could not open what the candidate shared: its outputs to files after
    // all (the candidate's process still holds them), compared from there.
    std::string why = r.result.value("unopened", std::string());
    Reply wrote = call({{"op", "write_held"}, {"job", job_json(job, after_dir)}}, 600s, true);
    if (!wrote.ok) return fail(wrote.error, wrote.environment);
    result.compared_how = "compared on the device, its outputs through files (" + why + ")";
    r = call(request(true), 600s, false);
  }
  // The trusted process failing is kopt's environment, never the candidate's verdict.
  if (!r.ok) return fail("kopt's comparison of the outputs failed: " + r.error, !r.tampered);
  if (r.result.contains("refused")) return fail(r.result.value("refused", std::string()), false);
  // The candidate's process lets its outputs go (any request does): their memory is the next
  // job's.
  (void)call({{"op", "ping"}}, 60s, true);
  std::vector<std::string> names;
  for (const auto& c : job.compare) names.push_back(c.name);
  (void)take_comparisons(r.result, names, result);
}

bool PythonRunner::compare_kept(const RunJob& job, const json& outputs, RunResult& result) {
  const TrustedMark mark = trusted_mark();
  const RunResult run = result;  // the run's own, before any comparison
  RunResult first = run;
  if (!compare_kept_once(job, outputs, first)) return false;
  bool opened = true;
  result = after_trusted_lost(job, mark, std::move(first), [&] {
    RunResult again = run;
    opened = compare_kept_once(job, outputs, again);
    return again;
  });
  return opened;
}

bool PythonRunner::compare_kept_once(const RunJob& job, const json& outputs, RunResult& result) {
  auto fail = [&](std::string why) {
    result.status = RunStatus::launch_failed;
    result.error = std::move(why);
    result.environment = true;  // kopt's executor and kopt's process: never the kernel's verdict
    return true;
  };
  bool shared = false;
  std::vector<std::string> names;
  json request = compare_request(
      job,
      [&](const OutputComparison& c, const JobTensor&) {
        if (!outputs.contains(c.name)) return json();
        names.push_back(c.name);
        shared = shared || outputs.at(c.name).contains("handle");
        return outputs.at(c.name);
      },
      true);
  Reply r = call(request, 600s, false);
  if (r.ok && r.result.contains("unopened")) return false;
  if (!r.ok) return fail("kopt's comparison of the outputs failed: " + r.error);
  if (r.result.contains("refused"))
    return fail("kopt's Python process could not compare what kopt's executor shared: " +
                r.result.value("refused", std::string()));
  if (take_comparisons(r.result, names, result))
    result.compared_how = shared ? "compared on the device, its outputs shared (CUDA IPC)"
                                 : "compared on the device, its outputs through files";
  return true;
}

}  // namespace kopt
