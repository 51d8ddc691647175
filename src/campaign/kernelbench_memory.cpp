// A KernelBench problem's GPU memory: the bound it is held to, what kopt's Python processes
// say held it, its JSON and its cell in the table.
#include <fmt/format.h>

#include <algorithm>

#include "kernelbench_cells.hpp"
#include "kopt/core/units.hpp"

namespace kopt::campaign {
using nlohmann::json;

namespace {
// The entry of the most bytes ("", 0 where there is none).
std::pair<std::string, std::uint64_t> largest(const std::map<std::string, std::uint64_t>& bytes) {
  auto most = std::max_element(bytes.begin(), bytes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == bytes.end()) return {"", 0};
  return *most;
}
}  // namespace

void GpuMemoryUse::set_bound(std::uint64_t output_bytes) {
  std::uint64_t beside = work_bytes.empty() ? output_bytes : largest(work_bytes).second;
  bound_bytes = static_cast<std::uint64_t>(1.1 * static_cast<double>(tensor_bytes + beside));
}

// A request's peak before the time between requests: what is reserved between two requests is
// what the one before left cached, so where the two are equal the request is what reserved it.
std::pair<std::string, std::uint64_t> GpuMemoryUse::largest_phase() const {
  constexpr std::string_view k_between = "held between requests";
  auto requests = process_reserved;
  requests.erase(std::string(k_between));
  auto most = largest(requests);
  auto between = process_reserved.find(std::string(k_between));
  if (between != process_reserved.end() && between->second > most.second) return *between;
  return most;
}

namespace {
std::optional<std::uint64_t> growth(const std::map<std::string, std::uint64_t>& peaks,
                                    std::optional<std::uint64_t> start) {
  if (!start || peaks.empty()) return std::nullopt;
  std::uint64_t peak = largest(peaks).second;
  return peak > *start ? peak - *start : 0;
}
}  // namespace

std::optional<std::uint64_t> GpuMemoryUse::reserved_growth() const {
  return growth(process_reserved, process_start_reserved);
}

std::optional<std::uint64_t> GpuMemoryUse::allocated_growth() const {
  return growth(process_allocated, process_start_allocated);
}

// The worker's reply: {"trusted": {"reserved": {phase: bytes}, "allocated": {...}, "work":
// {kind: bytes}, ...}, "candidate": {...}}; a candidate's phases are named so, and its calls'
// working memory is not the problem's.
void read_process_memory(GpuMemoryUse& m, const json& reply) {
  if (!reply.is_object()) return;
  for (const auto& [process, r] : reply.items()) {
    if (!r.is_object()) continue;
    const std::string prefix = process == "trusted" ? "" : process + ": ";
    for (auto [key, into] :
         {std::pair{"reserved", &m.process_reserved}, std::pair{"allocated", &m.process_allocated}})
      if (const json peaks = r.value(key, json()); peaks.is_object())
        for (const auto& [phase, bytes] : peaks.items()) {
          if (!bytes.is_number_unsigned()) continue;
          auto& slot = (*into)[prefix + phase];
          slot = std::max(slot, bytes.get<std::uint64_t>());
        }
    for (auto [key, into] : {std::pair{"start_reserved", &m.process_start_reserved},
                             std::pair{"start_allocated", &m.process_start_allocated}})
      if (const json start = r.value(key, json());
          process == "trusted" && start.is_number_unsigned())
        *into = start.get<std::uint64_t>();
    if (const json work = r.value("work", json()); process == "trusted" && work.is_object())
      for (const auto& [kind, bytes] : work.items())
        if (bytes.is_number_unsigned())
          m.work_bytes[kind] = std::max(m.work_bytes[kind], bytes.get<std::uint64_t>());
  }
}

json to_json(const GpuMemoryUse& m) {
  auto bytes = [](const std::optional<std::uint64_t>& b) { return b ? json(*b) : json(nullptr); };
  return {{"idle_bytes", bytes(m.idle_bytes)},
          {"peak_bytes", bytes(m.peak_bytes)},
          {"used_bytes", bytes(m.used_bytes())},
          {"bound_bytes", m.bound_bytes},
          {"tensor_bytes", m.tensor_bytes},
          {"work_bytes", m.work_bytes},
          {"process_reserved_bytes", m.process_reserved},
          {"process_allocated_bytes", m.process_allocated},
          {"process_start_reserved_bytes", bytes(m.process_start_reserved)},
          {"process_start_allocated_bytes", bytes(m.process_start_allocated)},
          {"note", m.note}};
}

GpuMemoryUse memory_from_json(const json& j) {
  GpuMemoryUse m;
  auto bytes = [&](const char* k) {
    return j.contains(k) && j.at(k).is_number() ? std::optional(j.at(k).get<std::uint64_t>())
                                                : std::nullopt;
  };
  m.idle_bytes = bytes("idle_bytes");
  m.peak_bytes = bytes("peak_bytes");
  m.bound_bytes = j.value("bound_bytes", std::uint64_t{0});
  m.tensor_bytes = j.value("tensor_bytes", std::uint64_t{0});
  m.work_bytes = j.value("work_bytes", std::map<std::string, std::uint64_t>{});
  m.process_reserved = j.value("process_reserved_bytes", std::map<std::string, std::uint64_t>{});
  m.process_allocated = j.value("process_allocated_bytes", std::map<std::string, std::uint64_t>{});
  m.process_start_reserved = bytes("process_start_reserved_bytes");
  m.process_start_allocated = bytes("process_start_allocated_bytes");
  m.note = j.value("note", std::string{});
  return m;
}

// "17.9 GiB of 19.1 GiB", "-" where not read or not run; over the bound, what held the most
// in kopt's Python process. Where its start was read, how far torch's allocator grew in the
// problem, how much of that its live tensors took, and the rest of the device's reading, which
// is outside the allocator (what CUDA libraries and modules load into a context, other
// processes): "12.0 GiB of 8.8 GiB (over; torch's allocator +12.0 GiB, 8.0 GiB of it live, most
// in sample torch_compile; 20.0 MiB outside it)". Else the phase's peak as read:
// "11.7 GiB of 8.8 GiB (over; sample torch_compile 12.0 GiB)", and how much more the device
// read where that is well beyond it.
std::string memory_cell(const KernelbenchEntry& e) {
  auto used = e.memory.used_bytes();
  if (!used) return "-";
  std::string over;
  if (*used > e.memory.bound_bytes) {
    auto [phase, bytes] = e.memory.largest_phase();
    auto grew = e.memory.reserved_growth();
    auto live = e.memory.allocated_growth();
    if (phase.empty())
      over = " (over)";
    else if (grew && live)
      over = fmt::format(" (over; torch's allocator +{}, {} of it live, most in {}; {} outside it)",
                         human_bytes(*grew), human_bytes(std::min(*live, *grew)), phase,
                         human_bytes(*used > *grew ? *used - *grew : 0));
    else if (*used > bytes + bytes / 5)
      over = fmt::format(" (over; {} {}, {} more outside torch's allocator)", phase,
                         human_bytes(bytes), human_bytes(*used - bytes));
    else
      over = fmt::format(" (over; {} {})", phase, human_bytes(bytes));
  }
  return fmt::format("{} of {}{}", human_bytes(*used), human_bytes(e.memory.bound_bytes), over);
}

}  // namespace kopt::campaign
