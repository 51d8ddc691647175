#include "kopt/evaluate/ceilings_store.hpp"

#include "kopt/core/clock.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;
using nlohmann::json;

std::string ceilings_key(const DeviceInfo& d) {
  return Sha256()
      .field("kopt-ceilings-v1")
      .field(d.name)
      .field(std::to_string(d.clocks.max_sm_mhz))
      .field(std::to_string(d.clocks.max_mem_mhz))
      .field(std::to_string(d.driver_version))
      .field(d.driver_release)
      .hex()
      .substr(0, 24);
}

fs::path ceilings_path(const fs::path& cache_root, const DeviceInfo& d) {
  return cache_root / "ceilings" / (ceilings_key(d) + ".json");
}

json to_json(const StoredCeilings& c) {
  return {{"schema_version", 1},
          {"device", to_json(c.device)},
          {"measured_at", c.measured_at},
          {"result", to_json(c.result)}};
}

namespace {

std::optional<StoredCeilings> load_ceilings_file(const fs::path& file) {
  auto text = read_text_file(file);
  if (!text) return std::nullopt;
  try {
    json j = json::parse(*text);
    StoredCeilings c;
    c.device = device_info_from_json(j.at("device"));
    c.measured_at = j.value("measured_at", std::string{});
    c.result = ceilings_result_from_json(j.at("result"));
    return c;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache entry is measured again
  }
}

}  // namespace

std::optional<StoredCeilings> load_ceilings(const fs::path& cache_root, const DeviceInfo& d) {
  return load_ceilings_file(ceilings_path(cache_root, d));
}

std::optional<StoredCeilings> find_ceilings_by_name(const fs::path& cache_root,
                                                    const std::string& device_name) {
  std::optional<StoredCeilings> newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cache_root / "ceilings", ec)) {
    auto c = load_ceilings_file(entry.path());
    if (c && c->device.name == device_name && (!newest || c->measured_at > newest->measured_at))
      newest = c;
  }
  return newest;
}

Expected<void> save_ceilings(const fs::path& cache_root, const StoredCeilings& c) {
  return write_text_atomic(ceilings_path(cache_root, c.device), to_json(c).dump(2));
}

double ceiling_value(const CeilingsResult& r, const std::string& name) {
  for (const auto& c : r.ceilings)
    if (c.name == name && c.error.empty()) return c.best;
  return 0.0;
}

double best_compute_rate(const CeilingsResult& r) {
  double best = 0;
  for (const auto& c : r.ceilings)
    if (c.unit == "FLOP/s" && c.error.empty()) best = std::max(best, c.best);
  return best;
}

Expected<std::pair<StoredCeilings, bool>> ensure_ceilings(const fs::path& cache_root,
                                                          WorkerClient& worker, bool refresh) {
  auto device = worker.device_info();
  if (!device) return Unexpected(device.error());
  if (!refresh)
    if (auto stored = load_ceilings(cache_root, *device)) return std::pair{*stored, true};
  auto measured = worker.ceilings(std::chrono::minutes(5));
  if (!measured) return Unexpected(measured.error());
  if (!measured->error.empty()) return Unexpected(environment_error(measured->error));
  StoredCeilings stored{*device, *measured, utc_timestamp()};
  if (auto w = save_ceilings(cache_root, stored); !w) return Unexpected(w.error());
  return std::pair{stored, false};
}

}  // namespace kopt::evaluate
