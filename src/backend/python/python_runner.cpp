#include "kopt/backend/python/python_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include "kopt/backend/drawn_inputs.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/core/python.hpp"

namespace kopt {
extern const EmbeddedFile k_python_worker_files[];
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

fs::path embedded_python_script(const fs::path& cache_root, const std::string& name,
                                const char* text) {
  const std::string file = name + ".py";
  const EmbeddedFile files[] = {{file.c_str(), text}, {nullptr, nullptr}};
  return embedded_python_files(cache_root, name, files);
}

fs::path embedded_python_files(const fs::path& cache_root, const std::string& name,
                               const EmbeddedFile* files) {
  Sha256 h;
  for (const EmbeddedFile* f = files; f->name; ++f) {
    h.field(f->name);
    h.field(f->text);
  }
  fs::path dir = cache_root / "python" / (name + "-" + h.hex().substr(0, 16));
  std::error_code ec;
  bool whole = true;
  for (const EmbeddedFile* f = files; f->name && whole; ++f) whole = fs::exists(dir / f->name, ec);
  if (whole) return dir / (name + ".py");
  // Written beside it and renamed into place whole: a worker never starts from half the files,
  // and kopt processes that write it at once leave one copy. A folder that lost a file (a
  // cache cleaned by hand) is moved aside first, as the single script is written again.
  static std::atomic<unsigned> k_parts{0};  // threads of one process too
  const std::string mine = std::to_string(::getpid()) + "-" + std::to_string(k_parts++);
  fs::path part = dir, damaged = dir;
  part += ".part-" + mine;
  damaged += ".damaged-" + mine;
  fs::remove_all(part, ec);
  whole = true;
  for (const EmbeddedFile* f = files; f->name && whole; ++f)
    whole = write_text_atomic(part / f->name, f->text).has_value();
  if (whole && fs::exists(dir, ec)) {
    fs::rename(dir, damaged, ec);
    fs::remove_all(damaged, ec);
  }
  if (whole) fs::rename(part, dir, ec);
  fs::remove_all(part, ec);  // a write the disk refused, or another process's copy came first
  return dir / (name + ".py");
}

fs::path python_worker_script(const fs::path& cache_root) {
  return embedded_python_files(cache_root, "kopt_python_worker", k_python_worker_files);
}

std::string python_executable() {
  return choose_python("torch");
}

PythonRunner::~PythonRunner() {
  for (Subprocess* child : {&m_trusted, &m_candidate})
    if (child->running()) child->kill_and_reap();
}

bool is_candidate(ModuleKind k) {
  return k == ModuleKind::triton;
}

PythonRunner::Reply PythonRunner::call(const json& request, std::chrono::milliseconds timeout,
                                       bool candidate) {
  Reply r;
  Subprocess& child = candidate ? m_candidate : m_trusted;
  // A candidate's process starts in a room of its own, confined (candidate_room.hpp).
  if (candidate && !child.running()) {
    if (std::string why = start_candidate(); !why.empty()) {
      r.error = why;
      return r;
    }
  }
  if (!child.running()) {
    // The trusted process: kopt's own and the problem's code (its memory policy: the worker's
    // use_expandable_segments); a candidate's process is started confined, without it.
    SpawnOptions trusted;
    trusted.env.emplace_back("KOPT_PYTHON_ROLE", "trusted");
    auto started =
        Subprocess::spawn({python_executable(), python_worker_script(cache_dir()).string()}, m_log,
                          on_device(trusted));
    if (!started) {
      r.error = "cannot start " + python_executable() + ": " + started.error().message +
                " (set KOPT_PYTHON to a Python with torch, numpy and, for Triton kernels, triton)";
      return r;
    }
    child = std::move(*started);
    if (!candidate) ++m_trusted_starts;
  }
  if (candidate) {
    json moved = request;
    // Moving files into the room and back is kopt's work: where the machine refuses it (a
    // full disk), that is the environment's failure, not the candidate's.
    auto handover = m_room->admit(moved);
    if (!handover) {
      r.error = handover.error().message;
      r.environment = handover.error().kind == ErrorKind::environment;
      return r;
    }
    r = exchange(child, moved, timeout);
    // A room the candidate filled past its allowance: its verdict, whatever the call said (a
    // write of kopt's that the full disk refused reads as the environment otherwise). Its
    // process and its room go, and their files with them.
    if (std::string full = m_room->overfull(*handover); !full.empty()) {
      child.kill_and_reap();
      m_room.reset();
      Reply refused;
      refused.error = full;
      return refused;
    }
    if (auto back = m_room->hand_back(*handover); !back && r.ok) {
      r.ok = false;
      r.error = back.error().message;
      r.environment = back.error().kind == ErrorKind::environment;
    }
    return r;
  }
  return exchange(child, request, timeout);
}

SpawnOptions PythonRunner::on_device(SpawnOptions base) const {
  if (!m_device_uuid.empty()) base.env.emplace_back("CUDA_VISIBLE_DEVICES", m_device_uuid);
  return base;
}

std::string python_device_mismatch(const std::string& expected, const std::string& reported) {
  if (expected.empty() || reported.empty()) return {};
  auto bare = [](std::string u) {
    for (char& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (u.rfind("gpu-", 0) == 0) u.erase(0, 4);
    return u;
  };
  if (bare(reported) == bare(expected)) return {};
  return "the Python worker ran on GPU " + reported + ", not on kopt's device " + expected +
         " (CUDA_VISIBLE_DEVICES was set for it): its numbers would be another device's";
}

std::string PythonRunner::wrong_device(const Reply& r) const {
  return python_device_mismatch(m_device_uuid, r.result.value("device_uuid", std::string()));
}

std::string PythonRunner::start_candidate() {
  using namespace std::chrono_literals;
  const json selftest{{"op", "selftest"}};
  m_room = std::make_unique<CandidateRoom>(python_executable(), k_python_worker_files);
  auto confined = Subprocess::spawn(m_room->argv(), m_log, on_device(m_room->spawn_options()));
  if (!confined)
    return "cannot start " + python_executable() + " for a candidate: " + confined.error().message;
  m_candidate = std::move(*confined);
  Reply test = exchange(m_candidate, selftest, 300s);
  m_sandbox = "confined (" + m_room->describe() + ")";
  if (test.ok) return {};
  // The confined process cannot do what a candidate needs. When an unconfined one can, the
  // sandbox is what breaks this machine's tools: kopt's environment, not a candidate's fault.
  // The candidates then run unconfined, and every table says so; else the machine's Python is
  // what is broken, and the candidates' own errors say how.
  // A confined process that died in its self-test is never replaced by a plain worker outside
  // the room (call() would start one): the candidates then have no process, and say why.
  std::string failed = "the candidates' Python failed kopt's self-test: " + test.error;
  SpawnOptions open = on_device(m_room->spawn_options());
  open.sandbox = nullptr;
  auto unconfined = Subprocess::spawn(m_room->argv(), m_log, open);
  if (!unconfined) return m_candidate.running() ? std::string() : failed;
  Reply again = exchange(*unconfined, selftest, 300s);
  if (!again.ok) return m_candidate.running() ? std::string() : failed;
  if (m_candidate.running()) m_candidate.kill_and_reap();
  m_candidate = std::move(*unconfined);
  m_sandbox = "NOT confined: confined, Python failed kopt's self-test (" +
              test.error.substr(0, test.error.find('\n')) + ") where an unconfined one passed it";
  return {};
}

PythonRunner::Reply PythonRunner::exchange(Subprocess& child, const json& request,
                                           std::chrono::milliseconds timeout) {
  Reply r;
  std::string line;
  if (!child.write_line(request.dump()) ||
      child.read_line(line, timeout) != Subprocess::ReadStatus::line) {
    std::string how = child.kill_and_reap();
    r.error =
        "the Python worker (" + python_executable() + ") stopped answering: " + how +
        "; its messages: " + (m_log.empty() ? std::string("the worker's log") : m_log.string());
    return r;
  }
  try {
    json reply = json::parse(line);
    r.ok = reply.value("ok", false);
    if (r.ok)
      r.result = reply.value("result", json::object());
    else {
      r.tampered = reply.value("tampered", false);
      r.environment = reply.value("environment", false);
      r.error = reply.value("error", std::string("?"));
      if (std::string tb = reply.value("traceback", std::string()); !tb.empty())
        r.error += "\n" + tb;
    }
  } catch (const std::exception& e) {
    r.error = std::string("the Python worker said something that is not JSON: ") + e.what();
  }
  if (r.tampered) child.kill_and_reap();  // it exits itself; never reused
  return r;
}

json PythonRunner::job_json(const RunJob& job, const fs::path& after_dir) const {
  json tensors = json::array();
  for (const auto& t : job.tensors) {
    fs::path out = t.role == Role::input ? after_dir / (t.name + ".after.bin") : t.output_path;
    tensors.push_back({{"name", t.name},
                       {"dtype", dtype_name(t.dtype)},
                       {"shape", t.shape},
                       {"role", role_name(t.role)},
                       {"input_path", t.draw ? std::string() : t.input_path.string()},
                       {"output_path", out.string()},
                       {"draw", draw_json(t.draw)}});
  }
  json exact_of = json::object();
  for (const auto& [name, source] : job.exact_of) exact_of[name] = python_source_json(source, name);
  return {{"kind", module_kind_name(job.kind)},
          {"module", job.module_path.string()},
          {"entry", job.entry},
          {"tensors", tensors},
          {"scalars", job.scalars},
          {"f64", job.in_f64},
          {"summarize_outputs", job.summarize_outputs},
          {"keep_outputs", job.keep_outputs},
          {"keep_margin", job.keep_margin},
          {"exact_of", exact_of}};
}

std::string PythonRunner::warm(bool compile) {
  // The L2 flush buffer is made here, before any problem's tensors, so that a buffer kept for
  // the process's life never sits between a problem's blocks in the allocator's segment.
  Reply r =
      call({{"op", "warm"}, {"compile", compile}, {"flush_bytes", m_default_flush}}, 300s, false);
  return r.ok ? std::string() : r.error;
}

json PythonRunner::memory(bool reset) {
  json out = json::object();
  for (bool candidate : {false, true}) {
    if (!(candidate ? m_candidate : m_trusted).running()) continue;
    Reply r = call({{"op", "memory"}, {"reset", reset}}, 60s, candidate);
    out[candidate ? "candidate" : "trusted"] = r.ok ? r.result : json{{"error", r.error}};
  }
  return out;
}

RunResult PythonRunner::run(const RunJob& job, const std::string& nvtx_range) {
  const TrustedMark mark = trusted_mark();
  RunResult result = run_once(job, nvtx_range);
  if (result.ok() && result.kept) remember_kept(job);
  if (job.compare.empty() || !is_candidate(job.kind)) return result;
  return after_trusted_lost(job, mark, std::move(result),
                            [&] { return run_once(job, nvtx_range); });
}

RunResult PythonRunner::run_once(const RunJob& job, const std::string& nvtx_range) {
  RunResult result;
  // Triton kernels take tensors by name; a tensor map (CUDA's) cannot reach them.
  if (std::string why = tensor_map_refusal(job.args, "a Python kernel"); !why.empty()) {
    result.status = RunStatus::launch_failed;
    result.error = why;
    return result;
  }
  TempDir after("kopt-python-run");
  bool compare = std::all_of(job.tensors.begin(), job.tensors.end(), [](const JobTensor& t) {
    return t.role != Role::input || !t.checksum.empty();
  });
  json req{{"op", "run"}, {"job", job_json(job, after.path())}, {"compare_inputs", compare}};
  if (!nvtx_range.empty()) req["nvtx_range"] = nvtx_range;
  const bool compared_here = !job.compare.empty() && is_candidate(job.kind);
  if (compared_here) req["share_outputs"] = true;
  Reply r = call(req, 600s, is_candidate(job.kind));
  if (!r.ok) {
    result.status = job.kind == ModuleKind::python_reference ? RunStatus::reference_failed
                                                             : RunStatus::launch_failed;
    result.error = r.error;
    result.environment = r.environment;
    return result;
  }
  if (std::string why = wrong_device(r); !why.empty()) {
    result.status = RunStatus::launch_failed;
    result.error = why;
    result.environment = true;  // the machine's set-up, not the job's fault
    return result;
  }
  // The Python side compares each input with a copy it kept on the device (no file of GBs
  // written back); where it could not keep one, it wrote the input back and kopt hashes it.
  // Drawn inputs it compares with the recipe, chunk by chunk, with no copy at all.
  const json modified = r.result.value("inputs_modified", json());
  const json written = r.result.value("inputs_written", json::array());
  for (const auto& t : job.tensors)
    if (t.role == Role::input) {
      bool was_written = std::find(written.begin(), written.end(), t.name) != written.end();
      if (modified.is_array() && !t.checksum.empty() && !was_written) {
        bool changed = std::find(modified.begin(), modified.end(), t.name) != modified.end();
        result.input_checksums[t.name] = changed ? "modified" : t.checksum;
        continue;
      }
      auto bytes = read_binary_file(after.path() / (t.name + ".after.bin"));
      if (bytes) result.input_checksums[t.name] = hex64(checksum64(*bytes));
    }
  const json& tol = r.result.value("tolerance", json::object());
  result.reference_atol = tol.value("atol", -1.0);
  result.reference_rtol = tol.value("rtol", -1.0);
  result.kernel_ms = r.result.value("seconds", 0.0) * 1e3;
  const json outputs = r.result.value("outputs", json::object());  // named: items() refers to it
  for (const auto& [name, summary] : outputs.items())
    result.outputs[name] = output_summary_from_json(summary);
  result.kept = r.result.value("kept", false);
  if (const json exact = r.result.value("exact_error", json()); exact.is_object())
    for (const auto& [name, e] : exact.items()) result.exact_error[name] = json_double(e);
  if (compared_here) compare_outputs(job, r.result, after.path(), result);
  return result;
}

}  // namespace kopt
