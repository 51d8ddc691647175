// A KernelBench problem's GPU memory: the bound counts what its reference's call needs beside
// kopt's tensors where kopt's Python process measured it, the outputs once more where not, and
// a problem over it names what in kopt's process held the most.
#include <gtest/gtest.h>

#include "campaign/kernelbench_cells.hpp"

namespace kopt::campaign {
namespace {
using nlohmann::json;

constexpr std::uint64_t k_gib = std::uint64_t{1} << 30;

// What the worker answers for a problem of 4 GiB of tensors whose reference's call took 1 GiB
// beside them and torch.compile's 0.5, and whose torch.compile samples reserved 9 GiB; a
// candidate's call took 3 GiB, which is not the problem's.
json reply() {
  return json{
      {"trusted",
       {{"reserved", {{"run python_reference", 5 * k_gib}, {"sample torch_compile", 9 * k_gib}}},
        {"allocated", {{"run python_reference", 5 * k_gib}}},
        {"work", {{"python_reference", k_gib}, {"torch_compile", k_gib / 2}}},
        {"now_reserved", 0}}},
      {"candidate",
       {{"reserved", {{"run triton", 2 * k_gib}}}, {"work", {{"triton", 3 * k_gib}}}}}};
}

GpuMemoryUse problem(std::uint64_t idle, std::uint64_t peak) {
  GpuMemoryUse m;
  m.tensor_bytes = 4 * k_gib;
  m.idle_bytes = idle;
  m.peak_bytes = peak;
  return m;
}

TEST(KernelbenchMemory, TheBoundCountsTheReferencesOwnWorkingMemoryWhereItWasMeasured) {
  GpuMemoryUse m = problem(k_gib, 6 * k_gib);
  m.set_bound(2 * k_gib);
  EXPECT_EQ(m.bound_bytes, static_cast<std::uint64_t>(1.1 * 6 * k_gib))
      << "not measured: the outputs once more";
  read_process_memory(m, reply());
  m.set_bound(2 * k_gib);
  EXPECT_EQ(m.work_bytes, (std::map<std::string, std::uint64_t>{{"python_reference", k_gib},
                                                                {"torch_compile", k_gib / 2}}))
      << "a candidate's working memory is not the problem's";
  EXPECT_EQ(m.bound_bytes, static_cast<std::uint64_t>(1.1 * 5 * k_gib));
  EXPECT_EQ(m.process_reserved.at("sample torch_compile"), 9 * k_gib);
  EXPECT_EQ(m.process_reserved.at("candidate: run triton"), 2 * k_gib)
      << "a candidate's process is named";
  EXPECT_EQ(m.largest_phase().first, "sample torch_compile");
  // What a request left cached is still reserved between requests: the request is named.
  m.process_reserved["held between requests"] = 9 * k_gib;
  EXPECT_EQ(m.largest_phase().first, "sample torch_compile");
  m.process_reserved["held between requests"] = 10 * k_gib;
  EXPECT_EQ(m.largest_phase(), std::pair(std::string("held between requests"), 10 * k_gib))
      << "more held between requests than any request took: that is named";
}

TEST(KernelbenchMemory, AProblemOverItsBoundNamesWhatHeldTheMost) {
  KernelbenchEntry e;
  e.memory = problem(k_gib, 10 * k_gib);
  read_process_memory(e.memory, reply());
  e.memory.set_bound(2 * k_gib);
  std::string cell = memory_cell(e);
  EXPECT_NE(cell.find("(over; sample torch_compile 9"), std::string::npos) << cell;
  EXPECT_EQ(cell.find("outside torch's allocator"), std::string::npos) << cell;
  // The device read far more than the process reserved: the rest is said, not left to guess.
  e.memory.process_reserved = {{"sample torch_eager", k_gib / 2}};
  e.memory.peak_bytes = 7 * k_gib;  // 6 GiB used of 5.5
  cell = memory_cell(e);
  EXPECT_NE(cell.find("sample torch_eager 512.0 MiB, 5.5 GiB more outside torch's allocator"),
            std::string::npos)
      << cell;
  e.memory.peak_bytes = 5 * k_gib;  // 4 GiB used of 5.5
  cell = memory_cell(e);
  EXPECT_EQ(cell.find("over"), std::string::npos) << cell;
  e.memory.idle_bytes.reset();
  EXPECT_EQ(memory_cell(e), "-") << "not read is not 0";
}

// Where the process said what it held when the problem started (its flush buffer, a library's
// workspace, kept for its life), the cell tells the allocator's growth in the problem, its live
// part, and what the device read beyond it: the reserved peak alone counts the kept memory as
// the problem's and hides what is outside the allocator.
TEST(KernelbenchMemory, AProblemOverItsBoundTellsTheAllocatorsGrowthFromItsStart) {
  KernelbenchEntry e;
  e.memory = problem(k_gib, 10 * k_gib);  // 9 GiB used
  json r = reply();
  r["trusted"]["allocated"]["sample torch_compile"] = 7 * k_gib;
  r["trusted"]["start_reserved"] = 2 * k_gib;
  r["trusted"]["start_allocated"] = k_gib;
  read_process_memory(e.memory, r);
  e.memory.set_bound(2 * k_gib);
  EXPECT_EQ(e.memory.reserved_growth(), 7 * k_gib);
  EXPECT_EQ(e.memory.allocated_growth(), 6 * k_gib);
  std::string cell = memory_cell(e);
  EXPECT_NE(cell.find("(over; torch's allocator +7.0 GiB, 6.0 GiB of it live, most in sample "
                      "torch_compile; 2.0 GiB outside it)"),
            std::string::npos)
      << cell;
  GpuMemoryUse back = memory_from_json(to_json(e.memory));
  EXPECT_EQ(back.process_start_reserved, 2 * k_gib);
  EXPECT_EQ(back.process_start_allocated, k_gib);
  // A candidate's process's start is not the problem's.
  GpuMemoryUse m = problem(k_gib, 2 * k_gib);
  read_process_memory(m, json{{"candidate", {{"start_reserved", 5}, {"start_allocated", 5}}}});
  EXPECT_FALSE(m.process_start_reserved);
  EXPECT_FALSE(m.reserved_growth()) << "no start read: no growth made up";
}

TEST(KernelbenchMemory, ItsRecordComesBackWhole) {
  GpuMemoryUse m = problem(k_gib, 3 * k_gib);
  read_process_memory(m, reply());
  m.set_bound(k_gib);
  GpuMemoryUse back = memory_from_json(to_json(m));
  EXPECT_EQ(back.bound_bytes, m.bound_bytes);
  EXPECT_EQ(back.tensor_bytes, m.tensor_bytes);
  EXPECT_EQ(back.work_bytes, m.work_bytes);
  EXPECT_EQ(back.process_reserved, m.process_reserved);
  EXPECT_EQ(back.process_allocated, m.process_allocated);
  EXPECT_EQ(back.process_allocated.at("run python_reference"), 5 * k_gib);
  EXPECT_EQ(back.used_bytes(), m.used_bytes());
  // A record of an earlier kopt has none of the new fields: nothing is made up for them.
  GpuMemoryUse old =
      memory_from_json(json{{"idle_bytes", 1}, {"peak_bytes", 2}, {"bound_bytes", 3}});
  EXPECT_TRUE(old.work_bytes.empty());
  EXPECT_TRUE(old.process_reserved.empty());
  EXPECT_FALSE(old.process_start_reserved);
}

TEST(KernelbenchMemory, AProcessThatCouldNotAnswerAddsNothing) {
  GpuMemoryUse m = problem(0, 0);
  read_process_memory(m, json{{"trusted", {{"error", "the worker died"}}}, {"candidate", 3}});
  read_process_memory(m, json::array());
  EXPECT_TRUE(m.process_reserved.empty());
  EXPECT_TRUE(m.work_bytes.empty());
}

}  // namespace
}  // namespace kopt::campaign
