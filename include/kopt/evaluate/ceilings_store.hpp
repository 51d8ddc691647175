#pragma once
// Measured ceilings, cached per device (name, max clocks, driver) for the roofline.
#include <filesystem>
#include <optional>
#include <string>

#include "kopt/backend/bench_job.hpp"
#include "kopt/worker/worker_client.hpp"

namespace kopt::evaluate {

struct StoredCeilings {
  DeviceInfo device;
  CeilingsResult result;
  std::string measured_at;  // UTC, ISO 8601
};

std::string ceilings_key(const DeviceInfo& d);
std::filesystem::path ceilings_path(const std::filesystem::path& cache_root, const DeviceInfo& d);
std::optional<StoredCeilings> load_ceilings(const std::filesystem::path& cache_root,
                                            const DeviceInfo& d);
// The newest stored ceilings of a device of that name (for saved profiles, with no device at hand).
std::optional<StoredCeilings> find_ceilings_by_name(const std::filesystem::path& cache_root,
                                                    const std::string& device_name);
Expected<void> save_ceilings(const std::filesystem::path& cache_root, const StoredCeilings& c);
// The stored ceilings of the worker's device; measured (and stored) first when there are
// none or `refresh` is set. The bool says whether they came from the cache.
Expected<std::pair<StoredCeilings, bool>> ensure_ceilings(const std::filesystem::path& cache_root,
                                                          WorkerClient& worker,
                                                          bool refresh = false);

// The best rate of a ceiling by name, 0 when missing.
double ceiling_value(const CeilingsResult& r, const std::string& name);
// The fastest compute rate measured (FMA or any tensor-core precision), 0 when none.
double best_compute_rate(const CeilingsResult& r);

nlohmann::json to_json(const StoredCeilings& c);

}  // namespace kopt::evaluate
