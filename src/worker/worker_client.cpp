#include "kopt/worker/worker_client.hpp"

#include "kopt/core/fs.hpp"
#include "kopt/worker/protocol.hpp"

namespace kopt {
using nlohmann::json;
using namespace std::chrono_literals;

WorkerClient::WorkerClient(WorkerOptions options) : m_options(std::move(options)) {}

WorkerClient::~WorkerClient() {
  if (m_process.running()) {
    m_process.write_line(R"({"op":"shutdown"})");
    m_process.reap(2s);
  }
}

std::string WorkerClient::log_tail() const {
  return file_tail(m_options.log_path, 600);
}

Expected<void> WorkerClient::ensure_started() {
  if (m_process.running()) return {};
  auto p = Subprocess::spawn(m_options.command, m_options.log_path);
  if (!p) return Unexpected(p.error());
  m_process = std::move(*p);
  ++m_starts;
  Reply hello = request({{"op", "hello"}}, m_options.start_timeout);
  if (!hello.message || !hello.message->value("ok", false))
    return Unexpected(internal_error("the worker did not start: " + hello.detail));
  if (hello.message->value("protocol", 0) != k_protocol_version)
    return Unexpected(internal_error("the worker speaks protocol " + hello.message->dump() +
                                     ", expected " + std::to_string(k_protocol_version)));
  return {};
}

bool machine_out_of_room(const std::string& last_words) {
  // strerror's words for a write the machine refused: EFBIG (the file-size limit), ENOSPC,
  // EDQUOT; whoever wrote them (kopt, a driver's compiler, a library's cache) ran out of room.
  for (const char* words : {"File too large", "No space left on device", "Disk quota exceeded"})
    if (last_words.find(words) != std::string::npos) return true;
  return false;
}

WorkerClient::Reply WorkerClient::request(const json& req, std::chrono::milliseconds timeout) {
  Reply r;
  if (!m_process.write_line(req.dump())) {
    r.detail = "the worker is gone: " + m_process.reap(1s);
    return r;
  }
  std::string line;
  switch (m_process.read_line(line, timeout)) {
    case Subprocess::ReadStatus::line:
      try {
        r.message = json::parse(line);
      } catch (const json::exception&) {
        r.detail = "the worker sent a malformed reply: " + line.substr(0, 200);
        m_process.kill_and_reap();
      }
      return r;
    case Subprocess::ReadStatus::timeout:
      r.failure = RunStatus::timeout;
      r.detail = "no answer within " + std::to_string(timeout.count()) +
                 " ms (watchdog); worker killed (" + m_process.kill_and_reap() + ")";
      return r;
    case Subprocess::ReadStatus::eof:
      break;
  }
  r.detail = "the worker died: " + m_process.reap(5s);
  std::string tail = log_tail();
  if (m_process.ended_by_a_limit() || machine_out_of_room(tail)) {
    r.environment = true;
    r.detail += " (the machine's limit or full disk, not the job's doing)";
  }
  if (!tail.empty()) r.detail += "; its last words: " + tail;
  return r;
}

Expected<json> WorkerClient::ask(const json& req, std::chrono::milliseconds timeout,
                                 const std::string& what) {
  if (auto s = ensure_started(); !s) return Unexpected(s.error());
  Reply r = request(req, timeout);
  if (!r.message) return Unexpected(internal_error(what + " failed: " + r.detail));
  if (!r.message->value("ok", false)) {
    Error e = environment_error(r.message->value("error", std::string("unknown error")));
    if (r.message->value("exit_code", 3) == 4) e.kind = ErrorKind::internal;
    return Unexpected(e);
  }
  return std::move(*r.message);
}

Expected<DeviceInfo> WorkerClient::device_info() {
  auto m = ask({{"op", "device_info"}}, m_options.start_timeout, "device query");
  if (!m) return Unexpected(m.error());
  return device_info_from_json(m->at("device"));
}

// Sends a job and reads its result; a worker that fails to start, dies, hangs, refuses
// or answers nonsense becomes a Result with that status (RunResult or BenchResult).
template <class Result, class Parse>
Result WorkerClient::call(const nlohmann::json& req, std::chrono::milliseconds timeout,
                          Parse parse) {
  Result failed;
  if (auto s = ensure_started(); !s) {
    failed.status = RunStatus::crash;
    failed.error = s.error().message;
    return failed;
  }
  Reply r = request(req, timeout);
  if (!r.message) {
    failed.status = r.failure;
    failed.error = r.detail;
    failed.environment = r.environment;
    return failed;
  }
  if (!r.message->value("ok", false)) {
    failed.status = RunStatus::launch_failed;
    failed.error = r.message->value("error", std::string("unknown error"));
    // Refused for the machine's reasons (a file it could not write, memory it did not have):
    // never a verdict on the job.
    failed.environment = r.message->value("exit_code", 4) == exit_code(ErrorKind::environment);
    return failed;
  }
  try {
    Result result = parse(r.message->at("result"));
    if (result.fatal) m_process.reap(5s);  // it exits by itself; the next job starts a new one
    return result;
  } catch (const std::exception& e) {
    failed.status = RunStatus::crash;
    failed.error = std::string("malformed result: ") + e.what();
    m_process.kill_and_reap();
    return failed;
  }
}

namespace {
// kopt's own work with a job's tensors (drawing the inputs, moving them to the device and the
// outputs back, through files for a Python job), allowed for on top of a watchdog at 100 MB/s,
// so that a problem of GBs on a busy host is not a hung kernel.
std::chrono::milliseconds data_allowance(const RunJob& job) {
  double bytes = 0;
  for (const auto& t : job.tensors) bytes += static_cast<double>(t.bytes);
  return std::chrono::milliseconds(static_cast<long>(bytes / 100e6 * 1000));
}
}  // namespace

BenchResult WorkerClient::bench(const BenchJob& job) {
  // The time cap bounds the timed launches; each variant may add its warm-up and what its
  // minimum sample count takes past the cap (min_samples_budget_s, or a timeout), and the
  // verification's own work (within the job timeout).
  auto cap = std::chrono::milliseconds(
      static_cast<long>(1000 * (job.options.rule.max_time_s +
                                (job.options.warmup_s + min_samples_budget_s(job.options.rule)) *
                                    static_cast<double>(job.variants.size()))));
  // Python variants compile before their first sample (Triton's JIT, torch.compile's
  // inductor): minutes, not seconds, on a cold cache.
  // Its tensors twice (seed 1's and the secret seed's, the outputs verified), as for a run.
  for (const auto& v : job.variants) {
    if (is_python(v.kind)) cap += std::chrono::minutes(5);
    cap += 2 * data_allowance(v);
  }
  return call<BenchResult>({{"op", "bench"}, {"job", to_json(job)}}, cap + m_options.job_timeout,
                           bench_result_from_json);
}

Expected<CeilingsResult> WorkerClient::ceilings(std::chrono::milliseconds timeout) {
  auto m = ask({{"op", "ceilings"}}, timeout, "measuring ceilings");
  if (!m) return Unexpected(m.error());
  try {
    return ceilings_result_from_json(m->at("result"));
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("malformed ceilings result: ") + e.what()));
  }
}

Expected<void> WorkerClient::warm_python(bool compile) {
  auto m = ask({{"op", "warm_python"}, {"compile", compile}}, std::chrono::minutes(5),
               "starting the Python worker");
  if (!m) return Unexpected(m.error());
  return {};
}

Expected<nlohmann::json> WorkerClient::python_memory(bool reset) {
  auto m = ask({{"op", "python_memory"}, {"reset", reset}}, std::chrono::minutes(2),
               "asking the Python processes' memory");
  if (!m) return Unexpected(m.error());
  return m->value("memory", nlohmann::json::object());
}

Expected<std::string> WorkerClient::toolkit() {
  auto m = ask({{"op", "toolkit"}}, m_options.start_timeout, "asking the worker's toolkit");
  if (!m) return Unexpected(m.error());
  return m->value("toolkit", std::string());
}

Expected<Build> WorkerClient::compile(const CompileRequest& req,
                                      const std::filesystem::path& module_path) {
  if (auto s = ensure_started(); !s) return Unexpected(s.error());
  Reply r = request({{"op", "compile"}, {"request", to_json(req)}, {"path", module_path.string()}},
                    std::chrono::minutes(5));
  Build failed;
  if (!r.message && r.environment)
    return Unexpected(environment_error(req.source_path.string() + ": building it, " + r.detail));
  if (!r.message) {  // the driver's compiler took the worker down, or hung
    failed.log = req.source_path.string() + ": the compiler " +
                 (r.failure == RunStatus::timeout ? "hung: " : "crashed the worker: ") + r.detail;
    return failed;
  }
  if (!r.message->value("ok", false))
    return Unexpected(environment_error(r.message->value("error", std::string("unknown error"))));
  try {
    return build_from_json(r.message->at("build"));
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("malformed build from the worker: ") + e.what()));
  }
}

Expected<std::string> WorkerCompiler::toolkit() {
  if (!m_toolkit) {
    auto t = m_worker.toolkit();
    if (!t) return Unexpected(t.error());
    m_toolkit = *t;
  }
  return *m_toolkit;
}

RunResult WorkerClient::run(const RunJob& job) {
  // The watchdog is the job's, with kopt's own data movement allowed for on top. A Python job
  // also starts the Python child once (importing torch takes seconds): a minute more.
  auto timeout = m_options.job_timeout + data_allowance(job);
  if (is_python(job.kind)) timeout += std::chrono::seconds(60);
  return call<RunResult>({{"op", "run"}, {"job", to_json(job)}}, timeout, run_result_from_json);
}

}  // namespace kopt
