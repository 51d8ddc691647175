#pragma once
// The workers of a command that can use several (tune, optimize): one per device of --gpus on
// this host, or one per device of a Ray cluster (--cluster ray[:ADDRESS]), each with its
// compiler. The first live one is where comparisons go (evaluate/dispatcher.hpp).
#include <memory>
#include <string>
#include <vector>

#include "kopt/backend/device_family.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/evaluate/checker.hpp"
#include "kopt/worker/ray_cluster.hpp"

namespace kopt::evaluate {

struct WorkerChoice {
  DeviceFamily family = DeviceFamily::cuda;
  std::string gpus;     // --gpus all|N,M,...; "" with no --cluster: `device` alone
  std::string cluster;  // --cluster ray|ray:ADDRESS; "": this host
  int device = 0;
  bool allow_mixed = false;
};

class WorkerPool {
 public:
  // Bad input for --gpus with --cluster, a device that does not exist or a malformed cluster;
  // an environment Error when the cluster cannot be reached or has no device.
  static Expected<std::unique_ptr<WorkerPool>> open(const WorkerChoice& choice);
  std::vector<CheckContext> contexts();
  CommandRunner& runner() { return m_runner; }
  std::size_t size() const { return m_workers.size(); }
  // "2 workers on the Ray cluster at 10.0.0.1:6379 (local)", or "" for one local worker.
  std::string description() const;

 private:
  WorkerPool() = default;
  TempDir m_tmp{"kopt-worker"};
  std::unique_ptr<RayCluster> m_cluster;
  std::vector<std::unique_ptr<WorkerClient>> m_workers;
  std::vector<std::unique_ptr<Compiler>> m_compilers;
  SystemCommandRunner m_runner;
};

}  // namespace kopt::evaluate
