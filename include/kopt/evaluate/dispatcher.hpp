#pragma once
// Hands tasks to workers (one per GPU of a host, or Ray actors across hosts): each free worker
// takes the next task. A worker found lost (it cannot be started again: its GPU or its Ray
// node is gone) is retired for the rest of the run, and its task goes once more to another
// worker; a task lost twice, or left with no live worker, is given up with the reason. A
// task's own failure (a kernel that crashes, a wrong output) is a result, not a loss.
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kopt/worker/worker_client.hpp"

namespace kopt::evaluate {

struct DispatchOutcome {
  bool lost = false;   // the worker is gone (not the task's own failure)
  std::string reason;  // why, when lost
};

class Dispatcher {
 public:
  static constexpr int k_tries = 2;  // a task is tried on at most two workers

  explicit Dispatcher(std::size_t workers) : m_live(workers, true) {}

  using Work = std::function<DispatchOutcome(std::size_t task, std::size_t worker)>;
  using GiveUp = std::function<void(std::size_t task, const std::string& why)>;
  // Runs tasks [0, tasks) on the live workers, one task per worker at a time, and returns when
  // every task has been done or given up. `work` and `give_up` are called from the workers'
  // threads (never two for one task at once); neither may throw.
  void run(std::size_t tasks, const Work& work, const GiveUp& give_up);

  // Retires a worker found lost outside run() (a confirmation on the first live worker).
  void retire(std::size_t worker, const std::string& reason);

  std::size_t workers() const { return m_live.size(); }
  std::size_t live() const;
  bool is_live(std::size_t worker) const;
  // The live workers' indices, in order (the first is where comparisons happen).
  std::vector<std::size_t> live_workers() const;
  // "worker 1 lost: REASON" for each retired worker, in the order they were lost.
  std::vector<std::string> notes() const;

 private:
  mutable std::mutex m_mutex;
  std::vector<bool> m_live;
  std::vector<std::string> m_notes;
};

// Whether `worker` is gone, asked after a job none of whose candidates succeeded (a job with one
// candidate ok proves its worker alive): it must answer a device query, started afresh if it
// died. nullopt when it answers; else why it is lost (a Ray node that died, a GPU gone).
std::optional<std::string> worker_lost(WorkerClient& worker);

struct CheckContext;
// "device 1 (NVIDIA H100 80GB HBM3)", with the Ray node it is on: "device 0 on node 3f2a1b2c on
// HOST (...)".
std::string device_label(const DeviceInfo& d);
// "worker 1 (device 0 on node 3f2a1b2c on HOST (...))": what a result measured by worker `index`
// of a run with several is tagged with; "worker 1" when it cannot say its device.
std::string worker_label(std::size_t index, WorkerClient& worker);

// The devices of a run's workers, each asked once: one model unless allow_mixed (bad input
// otherwise: a run compares candidates measured on one model); `notes` gets what differs
// between them (clocks, models) and a device that reports throttling at the start.
Expected<std::vector<DeviceInfo>> worker_devices(const std::vector<CheckContext>& workers,
                                                 bool allow_mixed, std::vector<std::string>& notes);

}  // namespace kopt::evaluate
