// kopt bench over several workers (--gpus, --cluster): the variants dealt out one per worker.
#include <algorithm>
#include <chrono>
#include <mutex>

#include "kopt/engine/bencher.hpp"
#include "kopt/engine/dispatcher.hpp"

namespace kopt {

std::optional<std::string> lost_after(const Expected<BenchReport>& b, WorkerClient& worker) {
  if (b && std::any_of(b->variants.begin(), b->variants.end(),
                       [](const BenchVariant& v) { return v.status == "ok"; }))
    return std::nullopt;
  return worker_lost(worker);
}

Expected<BenchReport> run_bench(const Problem& problem, const BenchRequest& request,
                                const std::vector<CheckContext>& workers,
                                std::vector<std::string>& notes) {
  if (workers.empty()) return Unexpected(internal_error("bench: no worker to run on"));
  if (workers.size() == 1) return run_bench(problem, request, workers.front());
  if (request.compare || request.vs_torch || request.variants.size() <= 1) {
    if (request.compare)
      notes.push_back("a comparison runs on one device: all of it on worker 0");
    else if (request.vs_torch)
      notes.push_back("the PyTorch baselines are timed beside the kernels: all on worker 0");
    return run_bench(problem, request, workers.front());
  }
  auto t0 = std::chrono::steady_clock::now();
  Dispatcher dispatch(workers.size());
  std::vector<std::optional<Expected<BenchReport>>> parts(request.variants.size());
  std::vector<std::size_t> ran_on(request.variants.size(), 0);
  std::mutex mutex;
  dispatch.run(
      request.variants.size(),
      [&](std::size_t i, std::size_t w) {
        BenchRequest one = request;
        one.variants = {request.variants[i]};
        auto b = run_bench(problem, one, workers[w]);
        if (auto lost = lost_after(b, workers[w].worker)) return DispatchOutcome{true, *lost};
        std::lock_guard lock(mutex);
        parts[i] = std::move(b);
        ran_on[i] = w;
        return DispatchOutcome{};
      },
      [&](std::size_t i, const std::string& why) {
        std::lock_guard lock(mutex);
        parts[i] = Unexpected(environment_error(why));
      });
  for (auto& n : dispatch.notes()) notes.push_back(std::move(n));

  // The report of the first live worker's first part holds the device, clocks and roofs.
  std::optional<BenchReport> out;
  for (std::size_t i = 0; i < parts.size() && !out; ++i)
    if (*parts[i]) out = **parts[i];
  if (!out) return Unexpected(parts.front()->error());
  out->variants.clear();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Expected<BenchReport>& b = *parts[i];
    if (!b) {
      BenchVariant v;
      v.kernel = request.variants[i].kernel;
      v.point = ParamPoint(request.variants[i].sets.begin(), request.variants[i].sets.end());
      v.status = "error";
      v.error = b.error().message;
      out->variants.push_back(std::move(v));
      continue;
    }
    for (BenchVariant v : b->variants) {
      v.device = worker_label(ran_on[i], workers[ran_on[i]].worker);
      out->variants.push_back(std::move(v));
    }
    out->build_s = std::max(out->build_s, b->build_s);
    out->check_s = std::max(out->check_s, b->check_s);
    out->measure_s = std::max(out->measure_s, b->measure_s);
  }
  out->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(*out);
}

}  // namespace kopt
