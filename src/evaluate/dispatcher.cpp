#include "kopt/evaluate/dispatcher.hpp"

#include <condition_variable>
#include <deque>
#include <thread>

#include "kopt/evaluate/checker.hpp"

namespace kopt::evaluate {

std::size_t Dispatcher::live() const {
  std::lock_guard lock(m_mutex);
  std::size_t n = 0;
  for (bool l : m_live) n += l;
  return n;
}

bool Dispatcher::is_live(std::size_t worker) const {
  std::lock_guard lock(m_mutex);
  return worker < m_live.size() && m_live[worker];
}

std::vector<std::size_t> Dispatcher::live_workers() const {
  std::lock_guard lock(m_mutex);
  std::vector<std::size_t> out;
  for (std::size_t w = 0; w < m_live.size(); ++w)
    if (m_live[w]) out.push_back(w);
  return out;
}

void Dispatcher::retire(std::size_t worker, const std::string& reason) {
  std::lock_guard lock(m_mutex);
  if (worker >= m_live.size() || !m_live[worker]) return;
  m_live[worker] = false;
  m_notes.push_back("worker " + std::to_string(worker) + " lost: " + reason);
}

std::vector<std::string> Dispatcher::notes() const {
  std::lock_guard lock(m_mutex);
  return m_notes;
}

void Dispatcher::run(std::size_t tasks, const Work& work, const GiveUp& give_up) {
  struct Queued {
    std::size_t task;
    int tries;
    std::string last_loss;
  };
  std::deque<Queued> queue;
  for (std::size_t t = 0; t < tasks; ++t) queue.push_back({t, 0, {}});
  std::size_t in_flight = 0;
  std::condition_variable changed;
  std::unique_lock lock(m_mutex);

  // With no live worker, whatever is queued is given up (outside the lock).
  auto drain = [&](std::unique_lock<std::mutex>& held) {
    std::deque<Queued> left;
    left.swap(queue);
    held.unlock();
    for (const auto& q : left)
      give_up(q.task, q.last_loss.empty() ? "no live worker to run it"
                                          : "no live worker left to retry it; " + q.last_loss);
    held.lock();
  };

  auto serve = [&](std::size_t w) {
    std::unique_lock held(m_mutex);
    for (;;) {
      changed.wait(held, [&] { return !queue.empty() || in_flight == 0; });
      if (queue.empty()) return;  // nothing queued, nothing in flight: done
      Queued q = std::move(queue.front());
      queue.pop_front();
      ++in_flight;
      held.unlock();
      DispatchOutcome out = work(q.task, w);
      held.lock();
      --in_flight;
      if (!out.lost) {
        changed.notify_all();
        continue;
      }
      m_live[w] = false;
      m_notes.push_back("worker " + std::to_string(w) + " lost: " + out.reason);
      ++q.tries;
      q.last_loss = "lost on worker " + std::to_string(w) + ": " + out.reason;
      bool others = false;
      for (bool l : m_live) others = others || l;
      if (q.tries < k_tries && others) {
        queue.push_front(std::move(q));
      } else {
        held.unlock();
        give_up(q.task,
                q.tries >= k_tries ? "its worker was lost twice; " + q.last_loss : q.last_loss);
        held.lock();
      }
      if (!others) drain(held);
      changed.notify_all();
      return;  // this worker is retired
    }
  };

  std::vector<std::size_t> workers;
  for (std::size_t w = 0; w < m_live.size(); ++w)
    if (m_live[w]) workers.push_back(w);
  if (workers.empty()) {
    drain(lock);
    return;
  }
  lock.unlock();
  if (workers.size() == 1) {
    serve(workers.front());
    return;
  }
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers.size(); ++i) threads.emplace_back(serve, workers[i]);
  serve(workers.front());
  for (auto& t : threads) t.join();
}

std::optional<std::string> worker_lost(WorkerClient& worker) {
  auto d = worker.device_info();
  if (d) return std::nullopt;
  return d.error().message;
}

std::string device_label(const DeviceInfo& d) {
  return "device " + std::to_string(d.ordinal) + (d.host.empty() ? "" : " on " + d.host) + " (" +
         d.name + ")";
}

std::string worker_label(std::size_t index, WorkerClient& worker) {
  auto d = worker.device_info();
  return "worker " + std::to_string(index) + (d ? " (" + device_label(*d) + ")" : "");
}

Expected<std::vector<DeviceInfo>> worker_devices(const std::vector<CheckContext>& ctxs,
                                                 bool allow_mixed,
                                                 std::vector<std::string>& notes) {
  std::vector<DeviceInfo> devices;
  for (const auto& c : ctxs) {
    auto d = c.worker.device_info();
    if (!d) return Unexpected(d.error());
    devices.push_back(*d);
  }
  const DeviceInfo& first = devices.front();
  for (std::size_t i = 1; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    std::string which = device_label(d);
    if (d.name != first.name && !allow_mixed)
      return Unexpected(bad_input(which + " is not the model of " + device_label(first) +
                                  "; a run compares candidates measured on one model "
                                  "(--allow-mixed to run on both anyway)"));
    if (d.name != first.name)
      notes.push_back(which + " is another model than " + device_label(first));
    if (d.clocks.max_sm_mhz != first.clocks.max_sm_mhz)
      notes.push_back(which + ": max SM clock " + std::to_string(d.clocks.max_sm_mhz) +
                      " MHz against " + std::to_string(first.clocks.max_sm_mhz) + " MHz on " +
                      device_label(first));
  }
  for (const auto& d : devices)
    if (!d.clocks.throttle_reasons.empty() && d.clocks.throttle_reasons != "none")
      notes.push_back(device_label(d) +
                      " reported throttling at the start: " + d.clocks.throttle_reasons);
  return devices;
}

}  // namespace kopt::evaluate
