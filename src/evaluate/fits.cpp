// Whether a problem's tensors fit the device (evaluate/fits.hpp).
#include "kopt/evaluate/fits.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kopt/core/units.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::evaluate {

std::uint64_t device_room_bytes(const DeviceInfo& device) {
  if (device.is_host_cpu() && device.host_memory_available_bytes > 0)
    return static_cast<std::uint64_t>(device.host_memory_available_bytes);
  return device.memory_bytes > 0 ? static_cast<std::uint64_t>(device.memory_bytes) : 0;
}

Expected<void> check_fits_device(const Problem& p, const DeviceInfo& device) {
  const std::uint64_t room = device_room_bytes(device);
  const std::uint64_t need = problem_tensor_bytes(p);
  if (room == 0 || need <= room) return {};
  // The largest tensors first: they are what a smaller dim would shrink.
  std::vector<std::pair<std::uint64_t, std::string>> sizes;
  Scope dims = p.dim_scope();
  for (const auto& t : p.tensors)
    if (auto shape = tensor_shape(t, dims))
      sizes.emplace_back(shape_numel(*shape) * dtype_size(t.dtype), t.name);
  std::stable_sort(sizes.begin(), sizes.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string largest;
  for (std::size_t i = 0; i < sizes.size() && i < 3; ++i)
    largest += fmt::format("{}{} {}", i ? ", " : "", sizes[i].second, human_bytes(sizes[i].first));
  if (sizes.size() > 3) largest += ", ...";
  std::string at;
  for (const auto& d : p.dims) at += fmt::format("{}{}={}", at.empty() ? "" : " ", d.name, d.value);
  const std::string room_text =
      device.is_host_cpu() && device.host_memory_available_bytes > 0
          ? fmt::format("the host of '{}' has {} available now", device.name, human_bytes(room))
          : fmt::format("the device '{}' has {}", device.name, human_bytes(room));
  return Unexpected(bad_input(
      fmt::format("at {} its tensors take {} ({}); {}: they cannot be held even once. Run it at "
                  "smaller dims (--dim, [dims]) or on a larger device",
                  at.empty() ? "its dims" : at, human_bytes(need), largest, room_text),
      p.spec_path.string(), p.dims.empty() ? 0 : p.dims.front().where.line, "dims"));
}

}  // namespace kopt::evaluate
