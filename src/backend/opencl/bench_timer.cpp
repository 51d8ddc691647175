// OpenclExecutor::bench: the queue's profiling counters around each launch (device time,
// so no host latency is inside), a cold sample's caches emptied of its tensors (on a CPU
// device that computes in kopt's memory their lines are evicted by address before and after
// it, host_cache.hpp; elsewhere a buffer of twice the device's global-memory cache is
// rewritten before it), the shared A B B A schedule, and timed launches checked against an
// untimed one (output_verifier.hpp), by hash and comparison where the outputs are
// (device_verify.hpp) wherever the device can.
#include <algorithm>
#include <chrono>

#include "device_verify.hpp"
#include "kopt/backend/output_verifier.hpp"
#include "kopt/backend/sampling_rounds.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/entropy.hpp"
#include "prepared_kernel.hpp"

namespace kopt::opencl {
namespace {
using Clock = std::chrono::steady_clock;
struct Variant : SampledVariant {
  PreparedKernel kernel;
  const RunJob* job;
  OutputVerifier verifier;
  Variant(PreparedKernel k, const RunJob& j, const BenchOptions& opt, std::uint64_t seed,
          bool on_device)
      : SampledVariant(opt.rule),
        kernel(std::move(k)),
        job(&j),
        verifier(j, opt, seed, on_device, on_device) {}
  ReadTensor reader(const Session& s) const {
    return [this, &s](std::size_t i, std::vector<std::byte>& host) {
      return kernel.read(s, i, job->tensors[i], host);
    };
  }
  // Writes a job tensor from the host (blocking: outside the timed window).
  WriteTensor writer(const Session& s) const {
    return
        [this, &s](std::size_t i, const std::vector<std::byte>& host) -> std::optional<RunResult> {
          if (cl_int err =
                  s.api->enqueue_write_buffer(s.queue.get(), kernel.buffers[i].get(), CL_TRUE, 0,
                                              host.size(), host.data(), 0, nullptr, nullptr);
              err != CL_SUCCESS)
            return cl_failure(RunStatus::launch_failed,
                              "clEnqueueWriteBuffer(" + job->tensors[i].name + ")", err);
          return std::nullopt;
        };
  }
  cl_int poison_outputs(const Session& s) const {
    for (std::size_t i : verifier.outputs())
      if (cl_int err = kernel.poison(s, i, job->tensors[i], verifier.fill_for(i));
          err != CL_SUCCESS)
        return err;
    return CL_SUCCESS;
  }
};

}  // namespace

BenchResult OpenclExecutor::bench(const BenchJob& job) {
  const Session& s = *m_session;
  const OpenclApi& api = *s.api;
  const BenchOptions& opt = job.options;
  BenchResult result;
  auto failed = [&](const RunResult& f) {
    result.status = f.status;
    result.error = f.error;
    result.fatal = f.fatal;
    result.environment = f.environment;
    return result;
  };
  // The outputs hashed and compared where they are (device_verify.hpp), where the device can
  // and they are not the host's own memory (BenchOptions::verify_on).
  if (!m_programs->verify) m_programs->verify = std::make_shared<DeviceVerifyCache>();
  const bool wanted = opt.verify_on == VerifyOn::device ||
                      (opt.verify_on == VerifyOn::automatic && !s.info.is_host_cpu());
  DeviceVerify on_device(s, *m_programs->verify, wanted);
  std::vector<Variant> variants;
  variants.reserve(job.variants.size());  // stable: the verification's closures hold them
  for (const RunJob& rj : job.variants) {
    RunResult failure;
    auto p = prepare_kernel(s, *m_programs, rj, failure);
    if (!p) return failed(failure);
    // Which samples are verified: nothing the kernel can predict.
    Variant& v = variants.emplace_back(std::move(*p), rj, opt, unpredictable_u64(), on_device.ok());
    v.series.label = rj.label;
    // The inputs' hashes before any launch of the variant.
    if (auto f = v.verifier.note_inputs(on_device.hasher(v.kernel, rj))) return failed(*f);
  }
  // A CPU device computing in kopt's memory: each cold sample's tensors evicted by address.
  const bool evict = opt.mode == CacheMode::cold && s.tensors_in_place;
  if (evict) {
    std::size_t most = 0;
    for (const auto& v : variants) most = std::max(most, v.kernel.storage_bytes());
    result.flush_bytes = static_cast<std::int64_t>(most);
    result.flush_method = std::string(flush_method_name(FlushMethod::evict));
  }
  // Elsewhere the flush buffer: rewritten (write-allocate) before each cold sample.
  Buffer flush;
  std::size_t flush_bytes = 0;
  if (opt.mode == CacheMode::cold && !evict) {
    std::int64_t want = opt.flush_bytes > 0 ? opt.flush_bytes
                                            : 2 * std::max<std::int64_t>(s.info.l2_bytes, 1 << 20);
    flush_bytes = static_cast<std::size_t>(want) / 4 * 4;
    cl_int err = CL_SUCCESS;
    flush = Buffer(
        &api, api.create_buffer(s.context.get(), CL_MEM_READ_WRITE, flush_bytes, nullptr, &err));
    if (err != CL_SUCCESS)
      return failed(cl_failure(RunStatus::launch_failed, "clCreateBuffer(flush)", err));
    result.flush_bytes = static_cast<std::int64_t>(flush_bytes);
    result.flush_method = "write";
  }

  auto wall_start = Clock::now();
  for (auto& v : variants) {
    auto t0 = Clock::now();
    int launches = 0;
    std::vector<double> launch_us;
    do {
      auto l0 = Clock::now();
      if (cl_int err = v.kernel.enqueue(s, nullptr); err != CL_SUCCESS)
        return failed(cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel", err));
      launch_us.push_back(seconds_since(l0) * 1e6);
      if (cl_int err = api.finish(s.queue.get()); err != CL_SUCCESS)
        return failed(cl_failure(RunStatus::fault, "clFinish", err));
      ++launches;
    } while (seconds_since(t0) < opt.warmup_s || launches < 2);
    std::sort(launch_us.begin(), launch_us.end());
    v.series.launch_overhead_us = launch_us[launch_us.size() / 2];
    v.series.warmup_s = seconds_since(t0);
    if (auto slow = too_slow_to_sample(v.series.label, v.series.warmup_s, launches, opt.rule)) {
      result.status = RunStatus::timeout;
      result.error = *slow;
      return result;
    }
    // The golden output: one more untimed launch (inouts set back to seed 1's values first).
    if (v.verifier.active()) {
      if (auto f = v.verifier.reset_inouts(v.writer(s))) return failed(*f);
      if (cl_int err = v.kernel.enqueue(s, nullptr); err != CL_SUCCESS)
        return failed(cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel", err));
      if (cl_int err = api.finish(s.queue.get()); err != CL_SUCCESS)
        return failed(cl_failure(RunStatus::fault, "clFinish", err));
      if (auto f = v.verifier.take_golden(v.reader(s), on_device.hasher(v.kernel, *v.job),
                                          on_device.comparer(v.kernel, *v.job)))
        return failed(*f);
      v.done = v.verifier.wrong();  // never timed (the check inside this job)
    }
  }

  std::optional<RunResult> failure;
  // The verification's own work (secret inputs written, outputs read back and compared) is not
  // the measurement's: it does not count against the time cap.
  double verify_s = 0;
  auto sample = [&](std::size_t idx, std::uint32_t round) -> std::optional<TakenSample> {
    Variant& v = variants[idx];
    // Poisoned outside the timed window: the fill completes before the launch's start counter.
    const std::size_t index = v.series.samples_s.size();
    const bool verify = v.verifier.poison_before(index, seconds_since(wall_start));
    const bool secret = verify && v.verifier.secret_before(index);
    auto verify_start = Clock::now();
    if (secret)
      if (auto f = v.verifier.write_inputs(v.writer(s), index)) {
        failure = *f;
        return std::nullopt;
      }
    if (verify)
      if (auto f = v.verifier.reset_inouts(v.writer(s))) {
        failure = *f;
        return std::nullopt;
      }
    if (verify) verify_s += seconds_since(verify_start);
    if (verify)
      if (cl_int err = v.poison_outputs(s); err != CL_SUCCESS) {
        failure = cl_failure(RunStatus::launch_failed, "clEnqueueFillBuffer(poison)", err);
        return std::nullopt;
      }
    if (flush) {
      cl_uint pattern = round;
      if (cl_int err = api.enqueue_fill_buffer(s.queue.get(), flush.get(), &pattern, sizeof pattern,
                                               0, flush_bytes, 0, nullptr, nullptr);
          err != CL_SUCCESS) {
        failure = cl_failure(RunStatus::launch_failed, "clEnqueueFillBuffer(flush)", err);
        return std::nullopt;
      }
    }
    if (evict) {  // after the poison and the writes: the queue is idle, the lines final
      if (cl_int err = api.finish(s.queue.get()); err != CL_SUCCESS) {
        failure = cl_failure(RunStatus::fault, "clFinish", err);
        return std::nullopt;
      }
      v.kernel.evict_tensors();
    }
    cl_event raw = nullptr;
    if (cl_int err = v.kernel.enqueue(s, &raw); err != CL_SUCCESS) {
      failure = cl_failure(RunStatus::launch_failed, "clEnqueueNDRangeKernel", err);
      return std::nullopt;
    }
    Event e(&api, raw);
    if (cl_int err = api.wait_for_events(1, &raw); err != CL_SUCCESS) {
      failure = cl_failure(RunStatus::fault, "clWaitForEvents", err);
      return std::nullopt;
    }
    // What the launch wrote goes back to DRAM outside any timed window, not during the next
    // variant's sample.
    if (evict) v.kernel.evict_tensors();
    auto sec = event_seconds(api, raw);
    if (!sec) {
      failure =
          cl_failure(RunStatus::fault, "clGetEventProfilingInfo", CL_PROFILING_INFO_NOT_AVAILABLE);
      return std::nullopt;
    }
    verify_start = Clock::now();
    if (verify)
      if (auto f = v.verifier.check_sample(v.reader(s), index, on_device.hasher(v.kernel, *v.job),
                                           on_device.comparer(v.kernel, *v.job))) {
        failure = *f;
        return std::nullopt;
      }
    if (secret)
      if (auto f = v.verifier.write_inputs(v.writer(s))) {
        failure = *f;
        return std::nullopt;
      }
    if (verify) verify_s += seconds_since(verify_start);
    return TakenSample{*sec, false};
  };
  std::vector<SampledVariant*> rotation;
  for (auto& v : variants) rotation.push_back(&v);
  const auto sampling_start = Clock::now();
  if (!run_sampling_rounds(rotation, opt, sample,
                           [&] { return seconds_since(sampling_start) - verify_s; }))
    return failed(*failure);
  for (auto& v : variants) {
    if (auto f = v.verifier.check_last(v.reader(s), v.series.samples_s.size(),
                                       on_device.hasher(v.kernel, *v.job),
                                       on_device.comparer(v.kernel, *v.job)))
      return failed(*f);
    v.series.verification = v.verifier.record();
    v.series.wall_s = seconds_since(wall_start);
    result.series.push_back(std::move(v.series));
  }
  result.clocks_before = result.clocks_after = s.info.clocks;
  return result;
}

}  // namespace kopt::opencl
