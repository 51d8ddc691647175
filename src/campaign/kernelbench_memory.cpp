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

std::pair<std::string, std::uint64_t> GpuMemoryUse::largest_phase() const {
  return largest(process_reserved);
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
  m.note = j.value("note", std::string{});
  return m;
}

// "17.9 GiB of 19.1 GiB", "-" where not read or not run; over the bound, what held the most
// in kopt's Python process: "11.7 GiB of 8.8 GiB (over; sample torch_compile 12.0 GiB)", and
// where the device's reading is well beyond it, how much is outside torch's allocator (what
// CUDA libraries load into a context, other processes).
std::string memory_cell(const KernelbenchEntry& e) {
  auto used = e.memory.used_bytes();
  if (!used) return "-";
  std::string over;
  if (*used > e.memory.bound_bytes) {
    auto [phase, bytes] = e.memory.largest_phase();
    if (phase.empty())
      over = " (over)";
    else if (*used > bytes + bytes / 5)
      over = fmt::format(" (over; {} {}, {} more outside torch's allocator)", phase,
                         human_bytes(bytes), human_bytes(*used - bytes));
    else
      over = fmt::format(" (over; {} {})", phase, human_bytes(bytes));
  }
  return fmt::format("{} of {}{}", human_bytes(*used), human_bytes(e.memory.bound_bytes), over);
}

}  // namespace kopt::campaign
