#include "kopt/worker/ray_cluster.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/python.hpp"
#include "kopt/core/tools_dir.hpp"

namespace kopt {
extern const char* const k_ray_script;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

fs::path ray_site_dir() {
  return tools_dir("ray", [](const fs::path& d) { return fs::is_directory(d / "ray"); });
}

namespace {

// The first of python3 (on PATH: the one scripts/bootstrap installed Ray with, and the one a
// user starts Ray with), /usr/bin/python3 and python that finds Ray, with the site directory
// on its path. Ray insists that a driver's Python is the cluster's, to the patch version.
std::string ray_python() {
  return choose_python("ray", ray_site_dir());
}

}  // namespace

std::vector<std::string> RayCluster::python_command() const {
  std::vector<std::string> cmd{ray_python(), m_script.string()};
  if (fs::path site = ray_site_dir(); !site.empty() && fs::is_directory(site)) {
    cmd.push_back("--site");
    cmd.push_back(site.string());
  }
  // A local instance is started as ray.init() starts one, with token authentication.
  if (m_head.running()) cmd.insert(cmd.end(), {"--auth", "token"});
  return cmd;
}

Expected<std::unique_ptr<RayCluster>> RayCluster::open(const std::string& spec,
                                                       const std::string& backend,
                                                       const fs::path& cache_root,
                                                       int opencl_devices,
                                                       const fs::path& log_dir) {
  if (spec != "ray" && spec.rfind("ray:", 0) != 0)
    return Unexpected(
        bad_input("--cluster " + spec + ": expected ray (a local Ray instance) or ray:ADDRESS"));
  std::unique_ptr<RayCluster> c(new RayCluster());
  c->m_backend = backend;
  c->m_script = embedded_python_script(cache_root, "kopt_ray", k_ray_script);
  c->m_log_dir = log_dir;
  if (spec == "ray") {
    auto cmd = c->python_command();
    cmd.insert(cmd.end(), {"head", "--opencl-devices",
                           std::to_string(backend == "opencl" ? opencl_devices : 0)});
    fs::path log = log_dir / "ray-head.log";
    auto head = Subprocess::spawn(cmd, log);
    if (!head) return Unexpected(head.error());
    c->m_head = std::move(*head);
    std::string line;
    if (c->m_head.read_line(line, 180s) != Subprocess::ReadStatus::line)
      return Unexpected(environment_error("could not start a local Ray instance (" +
                                          c->m_head.kill_and_reap() + "): " + file_tail(log, 800)));
    try {
      c->m_address = json::parse(line).at("address").get<std::string>();
    } catch (const std::exception&) {
      return Unexpected(internal_error("the local Ray instance answered " + line.substr(0, 200)));
    }
  } else {
    c->m_address = spec.substr(4);
    if (c->m_address.empty())
      return Unexpected(bad_input("--cluster ray:: an address (host:port) after ray:"));
  }
  auto cmd = c->python_command();
  cmd.insert(cmd.end(), {"slots", "--address", c->m_address, "--backend", backend});
  SystemCommandRunner runner;
  CommandResult r = runner.run(cmd, 180s);
  std::string err = r.err.size() > 800 ? "..." + r.err.substr(r.err.size() - 800) : r.err;
  if (!r.ok())
    return Unexpected(environment_error("cannot reach the Ray cluster at " + c->m_address + ": " +
                                        (r.timed_out ? "no answer in 180 s" : err)));
  try {
    std::string last = r.out.substr(r.out.find_last_of('{', r.out.rfind("\"slots\"")));
    json j = json::parse(last);
    for (const auto& s : j.at("slots"))
      c->m_slots.push_back({s.at("node").get<std::string>(), s.value("ip", ""), s.value("host", ""),
                            s.value("ordinal", 0)});
    if (c->m_slots.empty())
      return Unexpected(environment_error(
          "the Ray cluster at " + c->m_address +
          " has no device for kopt: no live node offers the resource " +
          j.value("resource", std::string("GPU")) +
          (backend == "opencl" ? " (ray start --resources '{\"kopt_opencl\": N}' on each node)"
                               : "")));
  } catch (const std::exception& e) {
    return Unexpected(internal_error(std::string("the Ray cluster's devices could not be read: ") +
                                     e.what() + "; its output: " + r.out.substr(0, 300)));
  }
  return c;
}

RayCluster::~RayCluster() {
  if (!m_head.running()) return;
  m_head.close_stdin();  // the head ends its Ray instance when its stdin closes
  m_head.reap(30s);
}

WorkerOptions RayCluster::worker_options(std::size_t i, const fs::path& kopt) const {
  const RaySlot& s = m_slots.at(i);
  WorkerOptions wo;
  wo.command = python_command();
  wo.command.insert(wo.command.end(),
                    {"relay", "--address", m_address, "--node", s.node, "--ordinal",
                     std::to_string(s.ordinal), "--backend", m_backend, "--kopt", kopt.string()});
  if (const char* ship = std::getenv("KOPT_RAY_SHIP"); ship && std::string(ship) == "always") {
    wo.command.push_back("--ship");
    wo.command.push_back("always");
  }
  wo.start_timeout = 120s;  // Python, Ray's connection, an actor placed on its node
  wo.log_path = m_log_dir / ("worker-ray" + std::to_string(i) + ".log");
  return wo;
}

}  // namespace kopt
