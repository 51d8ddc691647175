// CudaExecutor::bench: device events around each launch on a private stream, the L2
// flushed before each cold sample, host launch latency kept out of the timed window by a
// blocking kernel (nvbench's technique), CUDA-graph batches for very short kernels in hot
// mode, A B B A interleaving for comparisons, NVML throttle reasons after every sample, and
// timed launches checked against an untimed one (output_verifier.hpp), by hash and comparison
// where the outputs are (device_verify.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "bench_variant.hpp"
#include "device_verify.hpp"
#include "executor_state.hpp"
#include "kopt/backend/output_verifier.hpp"
#include "kopt/backend/sampling_rounds.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/core/entropy.hpp"
#include "kopt/core/fs.hpp"
#include "timer_helpers.hpp"

namespace kopt::cuda {
namespace {
using Clock = std::chrono::steady_clock;
using bench_detail::Graph;
using bench_detail::PinnedFlag;
using bench_detail::Variant;
}  // namespace

BenchResult CudaExecutor::bench(const BenchJob& job) {
  const DriverApi& api = *m_state->api;
  const BenchOptions& opt = job.options;
  BenchResult result;
  auto failed = [&](const RunResult& f) {
    result.status = f.status;
    result.error = f.error;
    result.fatal = f.fatal;
    result.environment = f.environment;
    return result;
  };
  auto fail = [&](RunStatus status, const char* call, CUresult r) {
    return failed(driver_failure(api, status, call, r));
  };
#define KOPT_CU_BENCH(status, call)                                   \
  do {                                                                \
    CUresult kopt_r_ = (call);                                        \
    if (kopt_r_ != CUDA_SUCCESS) return fail(status, #call, kopt_r_); \
  } while (0)

  auto info = cached_device_info();
  if (!info) {
    result.status = RunStatus::launch_failed;
    result.error = info.error().message;
    return result;
  }
  const DeviceInfo& dev = **info;
  result.clocks_before = read_clocks(dev.pci_bus_id);

  Stream stream(&api);
  Event start(&api), stop(&api);
  const TimerHelpers& helpers = timer_helpers(m_state->helpers, api, dev.arch());
  DeviceHasher hasher(api, helpers, dev.sm_count);
  // Outputs compared where they are (device_verify.hpp); the inputs then checked by their hash.
  if (!m_state->expected) m_state->expected = std::make_shared<ExpectedOnDevice>();
  DeviceComparison comparison(api, helpers, dev.sm_count, *m_state->expected);
  const bool on_device = hasher.ok() && comparison.ok() && opt.verify_on != VerifyOn::host;
  // The inputs drawn where they are timed (the worker wrote no file of them): only the device's
  // hashes then say they were left as drawn.
  std::optional<InputDraw> draw;
  if (draws_inputs(job)) {
    if (!on_device) {
      RunResult f{RunStatus::launch_failed,
                  "the inputs are drawn on the device, but its comparison could not start (no "
                  "room for its results): nothing would say they were left as drawn"};
      f.environment = true;
      return failed(f);
    }
    draw = InputDraw{helpers.draw, dev.sm_count};
  }
  std::vector<Variant> variants;
  variants.reserve(job.variants.size());  // stable: the verification's closures hold them
  for (const RunJob& rj : job.variants) {
    RunResult failure;
    auto p = prepare_launch(api, rj, failure, draw ? &*draw : nullptr);
    if (!p) return failed(failure);
    // Which samples are verified: nothing the kernel can predict.
    Variant& v = variants.emplace_back(std::move(*p), rj, opt, unpredictable_u64(), hasher.ok(),
                                       on_device, draw.has_value());
    v.series.label = rj.label;
    // The inputs' hashes before any launch of the variant.
    if (on_device)
      if (auto f = v.verifier.note_inputs(v.hasher(hasher, stream.get()))) return failed(*f);
  }
  auto comparer = [&](const Variant& v) {
    return on_device ? comparison.comparer(v.launch, stream.get()) : DeviceComparer{};
  };
  // The L2 flush: a buffer of twice the L2's size, read (or rewritten) before each cold sample.
  std::optional<DeviceBuffer> flush;
  std::optional<DeviceBuffer> flush_sink;
  std::size_t flush_words = 0;
  bool read_flush = opt.flush == FlushMethod::read && helpers.flush;
  if (opt.mode == CacheMode::cold) {
    std::int64_t bytes = opt.flush_bytes > 0 ? opt.flush_bytes : 2 * dev.l2_bytes;
    flush_words = static_cast<std::size_t>(bytes / 16) * 4;
    CUdeviceptr p = 0, sink = 0;
    if (CUresult r = api.mem_alloc(&p, flush_words * 4); r != CUDA_SUCCESS)
      return failed(own_allocation_failure(api, "kopt's L2 flush buffer", r));
    flush.emplace(&api, p);
    KOPT_CU_BENCH(RunStatus::launch_failed, api.memset_d32(p, 0x9e3779b9u, flush_words));
    KOPT_CU_BENCH(RunStatus::launch_failed, api.mem_alloc(&sink, 16));
    flush_sink.emplace(&api, sink);
    result.flush_bytes = static_cast<std::int64_t>(flush_words * 4);
    result.flush_method = read_flush ? "read" : "write";
  }
  CUdeviceptr flush_ptr = flush ? flush->get() : 0, sink_ptr = flush_sink ? flush_sink->get() : 0;
  unsigned long long flush_vectors = flush_words / 4;
  void* flush_params[] = {&flush_ptr, &flush_vectors, &sink_ptr};
  // The blocking kernel holds the stream until everything of a sample is queued.
  PinnedFlag flag(&api);
  CUfunction blocker = (opt.blocking_kernel && flag.ok()) ? helpers.blocking : nullptr;
  unsigned long long block_timeout_ns = 100'000'000ull;  // 100 ms
  CUdeviceptr flag_device = flag.device();
  void* blocker_params[] = {&flag_device, &block_timeout_ns};

  auto wall_start = Clock::now();
  // Warm-up (time-based) and the launch latency seen from the host.
  for (auto& v : variants) {
    auto t0 = Clock::now();
    std::vector<double> launch_us;
    int launches = 0;
    do {
      auto l0 = Clock::now();
      KOPT_CU_BENCH(RunStatus::launch_failed, v.launch.launch(stream.get()));
      launch_us.push_back(seconds_since(l0) * 1e6);
      KOPT_CU_BENCH(RunStatus::fault, api.stream_synchronize(stream.get()));
      ++launches;
    } while (seconds_since(t0) < opt.warmup_s || launches < 2);
    std::sort(launch_us.begin(), launch_us.end());
    v.series.launch_overhead_us = launch_us[launch_us.size() / 2];
    v.series.host_in_window = v.launch.is_solve() || !blocker;
    v.series.warmup_s = seconds_since(t0);
    if (auto slow = too_slow_to_sample(v.series.label, v.series.warmup_s, launches, opt.rule)) {
      result.status = RunStatus::timeout;
      result.error = *slow;
      return result;
    }
    // The golden output: one more untimed launch (inouts set back to seed 1's values first).
    if (v.verifier.active()) {
      if (auto f = v.verifier.reset_inouts(v.writer(), v.drawer(draw, stream.get())))
        return failed(*f);
      KOPT_CU_BENCH(RunStatus::launch_failed, v.launch.launch(stream.get()));
      KOPT_CU_BENCH(RunStatus::fault, api.stream_synchronize(stream.get()));
      if (auto f = v.verifier.take_golden(v.reader(), v.hasher(hasher, stream.get()), comparer(v)))
        return failed(*f);
      v.done = v.verifier.wrong();  // never timed (the check inside this job)
    }
  }
  // Hot mode: a kernel shorter than graph_below_us is timed in batches inside a CUDA graph.
  if (opt.mode == CacheMode::hot) {
    for (auto& v : variants) {
      // Per-launch time of 20 back-to-back launches: one launch between two events would
      // include the host's launch latency.
      constexpr int k_probe = 20;
      KOPT_CU_BENCH(RunStatus::launch_failed, api.event_record(start.get(), stream.get()));
      for (int i = 0; i < k_probe; ++i)
        KOPT_CU_BENCH(RunStatus::launch_failed, v.launch.launch(stream.get()));
      KOPT_CU_BENCH(RunStatus::fault, api.event_record(stop.get(), stream.get()));
      KOPT_CU_BENCH(RunStatus::fault, api.event_synchronize(stop.get()));
      float ms = 0;
      api.event_elapsed_time(&ms, start.get(), stop.get());
      double us = ms * 1000.0 / k_probe;
      if (us > 0 && us < opt.graph_below_us &&
          !v.launch.is_solve()) {  // solve(): the legacy stream cannot be captured
        int batch = std::clamp(static_cast<int>(std::ceil(opt.graph_sample_us / us)), 2, 1000);
        v.graph = std::make_unique<Graph>(&api);
        KOPT_CU_BENCH(RunStatus::launch_failed, v.graph->capture(v.launch, stream.get(), batch));
        v.series.graph = true;
        v.series.batch = batch;
        v.verifier.set_batched(batch);
      }
    }
  }

  std::optional<BenchResult> failure;
  // The verification's own work (secret inputs written, outputs read back and compared) is not
  // the measurement's: it does not count against the time cap.
  double verify_s = 0;
  auto sample = [&](std::size_t idx, std::uint32_t round) -> std::optional<TakenSample> {
    Variant& v = variants[idx];
    auto check = [&](RunStatus status, const char* call, CUresult r) {
      if (r != CUDA_SUCCESS && !failure) failure = fail(status, call, r);
      return r == CUDA_SUCCESS;
    };
#define KOPT_CU_SAMPLE(status, call)                        \
  do {                                                      \
    if (!check(status, #call, (call))) return std::nullopt; \
  } while (0)
    // Poisoned outside the timed window (before the flush and the start event). A graph batch
    // is poisoned before it and verified after it: not between its launches.
    const std::size_t index = v.series.samples_s.size();
    const bool verify = v.verifier.poison_before(index, seconds_since(wall_start));
    const bool secret = verify && v.verifier.secret_before(index);
    auto verify_start = Clock::now();
    if (secret)
      if (auto f = v.verifier.write_inputs(v.writer(), index, v.drawer(draw, stream.get()))) {
        failure = failed(*f);
        return std::nullopt;
      }
    if (verify)
      if (auto f = v.verifier.reset_inouts(v.writer(), v.drawer(draw, stream.get()))) {
        failure = failed(*f);
        return std::nullopt;
      }
    if (verify) verify_s += seconds_since(verify_start);
    if (verify) KOPT_CU_SAMPLE(RunStatus::launch_failed, v.poison_outputs(stream.get()));
    if (flush && read_flush) {
      unsigned blocks = static_cast<unsigned>(dev.sm_count) * 4;
      KOPT_CU_SAMPLE(RunStatus::launch_failed,
                     api.launch_kernel(helpers.flush, blocks, 1, 1, 256, 1, 1, 0, stream.get(),
                                       flush_params, nullptr));
    } else if (flush) {
      KOPT_CU_SAMPLE(RunStatus::launch_failed,
                     api.memset_d32_async(flush->get(), round, flush_words, stream.get()));
    }
    // A solve() may synchronize inside (cudaMemcpy, cudaDeviceSynchronize): no blocking
    // kernel for it, so its host time is in the window (the series says so).
    const bool hold = blocker && !v.launch.is_solve();
    if (hold) {
      flag.reset();
      KOPT_CU_SAMPLE(
          RunStatus::launch_failed,
          api.launch_kernel(blocker, 1, 1, 1, 1, 1, 1, 0, stream.get(), blocker_params, nullptr));
    }
    KOPT_CU_SAMPLE(RunStatus::launch_failed, api.event_record(start.get(), stream.get()));
    if (v.graph)
      KOPT_CU_SAMPLE(RunStatus::launch_failed, api.graph_launch(v.graph->exec(), stream.get()));
    else
      KOPT_CU_SAMPLE(RunStatus::launch_failed, v.launch.launch(stream.get()));
    KOPT_CU_SAMPLE(RunStatus::fault, api.event_record(stop.get(), stream.get()));
    if (hold) flag.release();
    KOPT_CU_SAMPLE(RunStatus::fault, api.event_synchronize(stop.get()));
    float ms = 0;
    KOPT_CU_SAMPLE(RunStatus::fault, api.event_elapsed_time(&ms, start.get(), stop.get()));
#undef KOPT_CU_SAMPLE
    if (hold && flag.timed_out()) ++v.series.blocking_timeouts;
    verify_start = Clock::now();
    if (verify)
      if (auto f = v.verifier.check_sample(v.reader(), index, v.hasher(hasher, stream.get()),
                                           comparer(v))) {
        failure = failed(*f);
        return std::nullopt;
      }
    if (secret)
      if (auto f =
              v.verifier.write_inputs(v.writer(), std::nullopt, v.drawer(draw, stream.get()))) {
        failure = failed(*f);
        return std::nullopt;
      }
    if (verify) verify_s += seconds_since(verify_start);
    return TakenSample{ms / 1000.0 / v.series.batch,
                       (read_throttle_mask(dev.pci_bus_id) & k_throttle_bits) != 0};
  };
  std::vector<SampledVariant*> rotation;
  for (auto& v : variants) rotation.push_back(&v);
  const auto sampling_start = Clock::now();
  if (!run_sampling_rounds(rotation, opt, sample,
                           [&] { return seconds_since(sampling_start) - verify_s; }))
    return *failure;
  for (auto& v : variants) {
    if (auto f = v.verifier.check_last(v.reader(), v.series.samples_s.size(),
                                       v.hasher(hasher, stream.get()), comparer(v)))
      return failed(*f);
    v.series.verification = v.verifier.record();
    v.series.wall_s = seconds_since(wall_start);
    result.series.push_back(std::move(v.series));
  }
  result.clocks_after = read_clocks(dev.pci_bus_id);
  return result;
#undef KOPT_CU_BENCH
}

}  // namespace kopt::cuda
