// A Python candidate's outputs compared where they were computed. The candidate's process
// shares its output tensors' device memory (CUDA IPC handles) and the trusted process, which
// kept the reference's outputs on the same device, compares them there: what crosses is handles
// and the comparison's summary, never a file of GBs. Where the driver will not share or open
// the memory (the CPU, a sandbox or a driver that refuses), the outputs go through files as
// before and are still compared by the trusted process. The candidate's process never compares
// anything itself: a check is never in code a candidate can reach.
#include <fmt/format.h>

#include "kopt/backend/python/python_runner.hpp"

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
    json outputs = json::array();
    for (const auto& c : job.compare) {
      const JobTensor* t = tensor_named(job, c.name);
      if (!t) continue;
      json got = !through_files && shared.is_object() && shared.contains(c.name)
                     ? shared.at(c.name)
                     : json{{"path", t->output_path.string()}};
      outputs.push_back({{"name", c.name},
                         {"dtype", dtype_name(t->dtype)},
                         {"shape", t->shape},
                         {"atol", c.tolerance.atol},
                         {"rtol", c.tolerance.rtol},
                         {"got", got},
                         {"expected", python_source_json(c.expected, c.name)},
                         {"exact", c.exact ? python_source_json(*c.exact, c.name) : json()}});
    }
    return json{{"op", "compare"}, {"outputs", outputs}};
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
  const json compared = r.result.value("compared", json::object());
  for (const auto& c : job.compare) {
    if (!compared.contains(c.name))
      return fail(fmt::format("kopt's comparison returned nothing for output '{}'", c.name), true);
    result.compared[c.name] = device_comparison_from_json(compared.at(c.name));
  }
}

}  // namespace kopt
