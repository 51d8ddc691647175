#include "kopt/evaluate/worker_pool.hpp"

#include "kopt/backend/opencl/opencl.hpp"
#include "kopt/evaluate/devices.hpp"

namespace kopt::evaluate {

Expected<std::unique_ptr<WorkerPool>> WorkerPool::open(const WorkerChoice& choice) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool());
  if (!choice.cluster.empty()) {
    if (!choice.gpus.empty())
      return Unexpected(
          bad_input("--gpus chooses devices of this host; with --cluster the workers are one per "
                    "device of the cluster"));
    int opencl_devices = 0;
    if (choice.family == DeviceFamily::opencl)
      if (auto d = opencl::list_opencl_devices()) opencl_devices = static_cast<int>(d->size());
    auto cluster = RayCluster::open(choice.cluster, std::string(device_family_name(choice.family)),
                                    cache_dir(), opencl_devices, pool->m_tmp.path());
    if (!cluster) return Unexpected(cluster.error());
    pool->m_cluster = std::move(*cluster);
    for (std::size_t i = 0; i < pool->m_cluster->slots().size(); ++i)
      pool->m_workers.push_back(
          std::make_unique<WorkerClient>(pool->m_cluster->worker_options(i, self_executable())));
  } else {
    auto ordinals = select_devices(choice.family, choice.gpus, choice.device);
    if (!ordinals) return Unexpected(ordinals.error());
    for (int d : *ordinals)
      pool->m_workers.push_back(
          std::make_unique<WorkerClient>(worker_options(choice.family, d, pool->m_tmp.path())));
  }
  // A compiler per worker: an OpenCL build happens in its device's worker, which serves one
  // request at a time (the workers run at once).
  for (auto& w : pool->m_workers) pool->m_compilers.push_back(make_compiler(choice.family, *w));
  return pool;
}

std::vector<CheckContext> WorkerPool::contexts() {
  std::vector<CheckContext> out;
  for (std::size_t i = 0; i < m_workers.size(); ++i)
    out.push_back(CheckContext{*m_compilers[i], m_runner, *m_workers[i]});
  return out;
}

std::string WorkerPool::description() const {
  if (m_cluster)
    return std::to_string(m_workers.size()) + " worker(s) on the Ray cluster at " +
           m_cluster->address() + (m_cluster->local() ? " (a local instance kopt started)" : "");
  if (m_workers.size() > 1) return std::to_string(m_workers.size()) + " workers, one per device";
  return "";
}

}  // namespace kopt::evaluate
