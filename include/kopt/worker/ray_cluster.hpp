#pragma once
// kopt's workers on a Ray cluster (tune|optimize --cluster ray[:ADDRESS]). kopt stays the
// orchestrator and the single writer of its run directory and experience DB; each device of
// the cluster gets a relay process (python/kopt_ray.py) that speaks the worker protocol on its
// stdin/stdout, exactly as `kopt worker` does, and forwards each request to a Ray actor pinned
// to that device's node, which runs `kopt worker` there. To WorkerClient a worker on another
// host is a worker process like any other: a node that dies is a worker that died, and the
// dispatcher (engine/dispatcher.hpp) retries its task elsewhere. Files travel by content
// hash where the node does not share this host's file system (the relay says which).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kopt/core/process.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt {

// One device of the cluster: a GPU (Ray's resource GPU) or an OpenCL device (kopt_opencl).
struct RaySlot {
  std::string node;  // Ray's node ID
  std::string ip, host;
  int ordinal = 0;  // the device's index on its node
};

class RayCluster {
 public:
  // `spec` is "ray" (a local Ray instance started now, ended with this object) or
  // "ray:ADDRESS" (a running cluster's GCS address, host:port). `backend` is "cuda" or
  // "opencl"; a local instance offers `opencl_devices` OpenCL devices. Bad input for another
  // spec; an environment Error when Ray is missing or the cluster has no device.
  static Expected<std::unique_ptr<RayCluster>> open(const std::string& spec,
                                                    const std::string& backend,
                                                    const std::filesystem::path& cache_root,
                                                    int opencl_devices,
                                                    const std::filesystem::path& log_dir);
  ~RayCluster();
  RayCluster(const RayCluster&) = delete;
  RayCluster& operator=(const RayCluster&) = delete;

  const std::string& address() const { return m_address; }
  bool local() const { return m_head.running(); }
  const std::vector<RaySlot>& slots() const { return m_slots; }
  // A worker for slot i: a relay to an actor on its node, running `kopt` (this executable;
  // sent to the node by content hash when the node lacks it).
  WorkerOptions worker_options(std::size_t i, const std::filesystem::path& kopt) const;

 private:
  RayCluster() = default;
  std::vector<std::string> python_command() const;

  std::string m_backend;
  std::string m_address;
  std::filesystem::path m_script, m_log_dir;
  Subprocess m_head;  // the local instance kopt started, if any
  std::vector<RaySlot> m_slots;
};

// Where scripts/bootstrap --ray installed Ray (a pip --target directory: .tools/ray of the
// checkout kopt was built from, or of one above the kopt executable), added to the relay's
// path; empty when there is none (then the relay's Python must have Ray itself).
std::filesystem::path ray_site_dir();

}  // namespace kopt
